"""The leader's rules for a rerun without parties that dropped out (leader/exclusion.py, #28):
only with the pairwise sums and the shuffle union, only with at least three survivors, and the
excluded parties accumulate over reruns. No daemons: the rules are pure."""

from __future__ import annotations

import pytest

from fedanon.federation.config import Hop
from fedanon.leader.exclusion import Attempt, Dropout, run_excluding
from fedanon.leader.federation import PartyFailure
from fedanon.leader.ring_settings import RingSettings
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
    attempt.opened(replies)
    assert attempt.allowed
    replies["hospital-3"] = pb.OpenSessionReply(allow_exclusion=False)
    attempt.opened(replies)
    assert not attempt.allowed
    attempt.opened({h.name: pb.OpenSessionReply(allow_exclusion=True) for h in HOPS})
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
