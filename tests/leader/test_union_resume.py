"""Where the leader resumes a layered union's strip after a lost party rejoined (#28,
docs/distributed.md "During the union"): at the hop before the lost one, which forwards its
kept batch; the whole pass again only where that hop kept nothing. The ring of real daemons
is tests/distributed/test_rejoin.py's; here the choices, failure by failure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from fedanon.leader.federation import PartyFailure
from fedanon.leader.union import UnionProgress, _ring_call
from fedanon.protos import fedanon_v1_pb2 as pb

RING = ["hospital-a", "hospital-b", "hospital-c"]


class Refused(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


@dataclass
class Ring:
    ring: list[str]


@dataclass
class Calls:
    """The union's calls, answering STRIP from a script: party -> the error it raises."""

    errors: dict[str, Refused]
    session: Ring = field(default_factory=lambda: Ring(RING))
    sent: list[tuple[str, bool, int]] = field(default_factory=list)

    def send(
        self, name: str, request: pb.UnionRequest, items: Any, deadline: float
    ) -> tuple[pb.UnionReply, int, int]:
        self.sent.append((name, request.forward_kept, len(items)))
        if name in self.errors:
            raise self.errors.pop(name)
        return pb.UnionReply(chunks=4), 1, 1


def strip(calls: Calls, progress: UnionProgress) -> pb.UnionReply:
    request = pb.UnionRequest(phase=pb.UNION_PHASE_STRIP)
    reply, _sent, _received = _ring_call(calls, request, [b"x"] * 5, 0.0, progress)  # type: ignore[arg-type]
    return reply


def unreachable(party: str) -> Refused:
    return Refused(grpc.StatusCode.UNAVAILABLE, f"party {party}: unreachable (connection refused)")


def test_a_lost_hop_is_resumed_from_its_predecessor_not_from_the_first_hop() -> None:
    progress = UnionProgress()
    calls = Calls({"hospital-a": unreachable("hospital-c")})  # a relays c's loss
    with pytest.raises(PartyFailure, match="hospital-c"):
        strip(calls, progress)
    assert progress.resume_at == "hospital-b"
    assert strip(calls, progress).chunks == 4
    assert calls.sent == [("hospital-a", False, 5), ("hospital-b", True, 0)]


def test_a_hop_that_kept_nothing_gets_the_whole_pass_again() -> None:
    progress = UnionProgress(resume_at="hospital-b")
    nothing = Refused(
        grpc.StatusCode.FAILED_PRECONDITION,
        "party hospital-b: union: no batch peeled in union round 3 to forward again",
    )
    calls = Calls({"hospital-b": nothing})
    assert strip(calls, progress).chunks == 4
    assert calls.sent == [("hospital-b", True, 0), ("hospital-a", False, 5)]


def test_a_failure_further_down_a_resumed_strip_is_not_a_reason_for_a_whole_pass() -> None:
    progress = UnionProgress(resume_at="hospital-a")
    refused = Refused(grpc.StatusCode.FAILED_PRECONDITION, "party hospital-c: union: other batch")
    calls = Calls({"hospital-a": refused})
    with pytest.raises(PartyFailure, match="hospital-c: union: other batch"):
        strip(calls, progress)
    assert calls.sent == [("hospital-a", True, 0)]
    assert progress.resume_at is None  # not a lost party: nothing to resume


@pytest.mark.parametrize(
    ("failure", "resume_at"),
    [
        (PartyFailure("x", party="hospital-a", code=grpc.StatusCode.UNAVAILABLE), None),
        (PartyFailure("x", party="hospital-c", code=grpc.StatusCode.UNAVAILABLE), "hospital-b"),
        (PartyFailure("x", party="hospital-c", code=grpc.StatusCode.DEADLINE_EXCEEDED), None),
        (PartyFailure("x", party="elsewhere", code=grpc.StatusCode.UNAVAILABLE), None),
    ],
)
def test_the_strip_resumes_only_after_a_lost_party_past_the_first_hop(
    failure: PartyFailure, resume_at: str | None
) -> None:
    progress = UnionProgress(resume_at="hospital-b")
    assert progress.lost(failure, RING) is failure
    assert progress.resume_at == resume_at


def test_a_new_round_forgets_where_the_last_one_would_resume() -> None:
    progress = UnionProgress(round=2, resume_at="hospital-b")
    assert progress.for_round(3).resume_at is None
    assert progress.for_round(3).round == 3
