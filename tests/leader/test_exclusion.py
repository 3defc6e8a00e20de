"""The leader's rules for a rerun without parties that dropped out (leader/exclusion.py, #28):
only with the pairwise sums and the shuffle union, only with at least three survivors, and the
excluded parties accumulate over reruns. No daemons: the rules are pure."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, NoReturn, cast
from unittest import mock

import grpc
import numpy as np
import pytest

from fedanon.algorithms.tds.layout import Specialization
from fedanon.algorithms.tds.prefix import Prefix
from fedanon.errors import FedanonError
from fedanon.federation.config import Hop
from fedanon.leader.exclusion import Attempt, Dropout, probe, run_excluding
from fedanon.leader.federation import PartyFailure
from fedanon.leader.ring_settings import RingSettings
from fedanon.party.exclusion import rerun
from fedanon.party.handlers.lkc_session import LKCSession
from fedanon.party.policy import Policy
from fedanon.protos import fedanon_v1_pb2 as pb

HOPS = [Hop(f"hospital-{i}", f"127.0.0.1:{5000 + i}") for i in range(1, 6)]
FAILURE = PartyFailure("secure sum (pairwise), iteration 3: party hospital-2: unreachable (x)")


def _job(sum_mode: str = "pairwise", union_mode: str = "shuffle") -> RingSettings:
    return RingSettings(sum_mode=sum_mode, union_mode=union_mode)


def test_a_rerun_leaves_out_the_parties_gone_and_keeps_those_left_out_before() -> None:
    first = Attempt(list(HOPS))
    second = first.rerun(Dropout(FAILURE, ["hospital-2"]), _job())
    assert [h.name for h in second.parties] == [
        "hospital-1",
        "hospital-3",
        "hospital-4",
        "hospital-5",
    ]
    assert (second.excluded, second.number, second.allowed) == (["hospital-2"], 2, True)
    third = second.rerun(Dropout(FAILURE, ["hospital-5"]), _job("sparse"))
    assert third.excluded == ["hospital-2", "hospital-5"]
    assert [h.name for h in third.parties] == ["hospital-1", "hospital-3", "hospital-4"]


def test_a_rerun_resumes_from_the_latest_attempt_that_set_its_start_state() -> None:
    """The first attempt completed two specializations: the rerun inherits them. A rerun that
    fails before its adoption completed (no history of its own) hands the same on; one that
    completed rounds of its own hands those on."""
    steps = [Specialization(0, 0, np.ones((1, 2), dtype=bool))] * 2
    first = Attempt(list(HOPS))
    first.completed = Prefix(steps, [{"attribute": "a"}] * 2)
    second = first.rerun(Dropout(FAILURE, ["hospital-2"]), _job())
    assert second.inherited is first.completed and second.completed is None
    third = second.rerun(Dropout(FAILURE, ["hospital-5"]), _job())
    assert third.inherited is first.completed
    second.completed = Prefix(steps[:1], [{"attribute": "a"}])
    third = second.rerun(Dropout(FAILURE, ["hospital-5"]), _job())
    assert third.inherited is second.completed


@pytest.mark.parametrize(
    ("job", "gone", "reason"),
    [
        (_job("ring"), ["hospital-2"], 'a rerun needs sum_mode = "pairwise" or "sparse"'),
        (_job(union_mode="layered"), ["hospital-2"], '[union] mode = "shuffle"'),
        (_job(), ["hospital-2", "hospital-4", "hospital-5"], "2 parties would remain"),
    ],
)
def test_no_rerun_fails_with_the_attempts_error_and_why(
    job: RingSettings, gone: list[str], reason: str
) -> None:
    with pytest.raises(PartyFailure) as failure:
        Attempt(list(HOPS)).rerun(Dropout(FAILURE, gone), job)
    message = str(failure.value)
    assert message.startswith(str(FAILURE)) and reason in message
    assert f"no rerun without {', '.join(gone)}" in message and "\n" not in message


def test_exclusion_needs_every_partys_consent_and_ends_with_the_release() -> None:
    """`opened` allows a rerun only if every reply allows it; `united` (the leader holds the
    release) forbids it again: the failure then passes through `watching` unchanged."""
    attempt = Attempt(list(HOPS))
    assert not attempt.allowed
    replies = {h.name: pb.OpenSessionReply(allow_exclusion=True) for h in HOPS}
    attempt.opened(replies, _job())
    assert attempt.allowed
    replies["hospital-3"] = pb.OpenSessionReply(allow_exclusion=False)
    attempt.opened(replies, _job())
    assert not attempt.allowed
    attempt.opened({h.name: pb.OpenSessionReply(allow_exclusion=True) for h in HOPS}, _job())
    attempt.united()
    with pytest.raises(PartyFailure) as passed, attempt.watching(None, 1.0):
        raise FAILURE
    assert passed.value is FAILURE


def test_run_excluding_reruns_until_an_attempt_finishes() -> None:
    seen: list[list[str]] = []
    lines: list[str] = []

    def attempt(current: Attempt) -> str:
        seen.append([h.name for h in current.parties])
        if len(seen) < 3:
            raise Dropout(FAILURE, [current.parties[-1].name])
        return "release"

    result, last = run_excluding(Attempt(list(HOPS)), _job(), attempt, lines.append)
    assert result == "release" and last.number == 3
    assert last.excluded == ["hospital-5", "hospital-4"]
    assert seen[-1] == ["hospital-1", "hospital-2", "hospital-3"]
    assert len(lines) == 2 and "hospital-5 dropped out" in lines[0]


class _Shell:
    """The part of a party daemon ``rerun`` uses: its policy, the open session (a mock of an
    LKC session among hospital-1..4 at attempt 0), the store; a refusal raises its line."""

    def __init__(self, allow_exclusion: bool, sum_reruns: bool = True) -> None:
        self.config = SimpleNamespace(
            name="hospital-1", policy=Policy(allow_exclusion=allow_exclusion)
        )
        self.lock = threading.Lock()
        self.store = mock.Mock()
        self.session = mock.Mock(spec=LKCSession, session_id="ab" * 16, ended=False, attempt=0)
        self.session.configure_mock(kind="lkc", reruns=True, ring=[h.name for h in HOPS[:4]])
        self.session.sums = SimpleNamespace(reruns=sum_reruns)

    def refuse(self, _context: object, _code: grpc.StatusCode, message: str) -> NoReturn:
        raise FedanonError(message)


def _switch(ring: list[str], excluded: list[str]) -> pb.RekeyRerunRequest:
    ref = pb.SessionRef(session_id="ab" * 16, attempt=1)
    return pb.RekeyRerunRequest(ref=ref, ring=ring, excluded=excluded)


def test_a_party_joins_a_rerun_only_under_its_own_rules() -> None:
    """The party's side (party/exclusion.py ``rerun``), whatever the leader does: its own
    consent, a pairwise sum, a roster without the excluded parties and of at least three;
    a refused switch leaves the session at its attempt."""
    survivors = ["hospital-1", "hospital-3", "hospital-4"]
    accepting = _Shell(True)
    rerun(cast(Any, accepting), _switch(survivors, ["hospital-2"]), cast(Any, None))
    accepting.session.rekey.assert_called_once_with(1, survivors, "hospital-1")
    refusals = [
        (_Shell(False), _switch(survivors, ["hospital-2"]), "does not allow exclusion"),
        (_Shell(True, False), _switch(survivors, ["hospital-2"]), "needs the pairwise sum"),
        (_Shell(True), _switch(["hospital-1", "hospital-5", "hospital-3"], []), "hospital-5"),
        (_Shell(True), _switch(["hospital-1", "hospital-3"], HOPS_2_4), "at least 3 parties"),
        (_Shell(True), _switch(survivors, ["hospital-5"]), "not those its roster leaves out"),
    ]
    for shell, request, why in refusals:
        with pytest.raises(FedanonError, match=why):
            rerun(cast(Any, shell), request, cast(Any, None))
        shell.session.rekey.assert_not_called()
        shell.store.update.assert_not_called()


HOPS_2_4 = ["hospital-2", "hospital-4"]


class _Refused(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code


class _Status:
    """A party's ``Status`` stub answering with `code` (None: a reply)."""

    def __init__(self, code: grpc.StatusCode | None) -> None:
        self.code = code

    def future(self, request: pb.StatusRequest, timeout: float) -> _Status:
        return self

    def result(self) -> pb.StatusReply:
        if self.code is not None:
            raise _Refused(self.code)
        return pb.StatusReply()


def test_probe_counts_only_the_parties_that_do_not_answer_as_gone() -> None:
    """A party that refuses (it still answers) is no reason to exclude it; one unreachable or
    past the deadline is gone. In ring order."""
    codes = {
        "hospital-1": None,
        "hospital-2": grpc.StatusCode.DEADLINE_EXCEEDED,
        "hospital-3": grpc.StatusCode.PERMISSION_DENIED,
        "hospital-4": grpc.StatusCode.UNAVAILABLE,
        "hospital-5": grpc.StatusCode.FAILED_PRECONDITION,
    }
    stubs = {name: SimpleNamespace(Status=_Status(code)) for name, code in codes.items()}
    session = SimpleNamespace(ring=list(codes), stubs=stubs)
    assert probe(cast(Any, session), 1.0) == ["hospital-2", "hospital-4"]
