"""When the leader decides whether a dropout can be followed by a rerun (#28, review of
leader/exclusion.py): at the handshake, before any dropout. A party that did not opt in, or a
job whose sum or union forwards along the ring, means no rerun: a party that drops out then
fails the job at once (no Status probe, no abort first) with one line naming the gone party
and why no rerun; a refusal by a party that still answers is never said to be a dropout."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from fedanon.federation.config import Hop
from fedanon.leader.exclusion import Attempt
from fedanon.leader.federation import PartyFailure
from fedanon.leader.ring_settings import RingSettings
from fedanon.protos import fedanon_v1_pb2 as pb

HOPS = [Hop(f"hospital-{i}", f"127.0.0.1:{5000 + i}") for i in range(1, 5)]
GONE = PartyFailure(
    "secure sum (pairwise), iteration 3: party hospital-3: unreachable (x)",
    "hospital-3",
    grpc.StatusCode.UNAVAILABLE,
)
REFUSED = PartyFailure(
    "secure sum (pairwise), iteration 3: party hospital-3: stale iteration",
    "hospital-3",
    grpc.StatusCode.FAILED_PRECONDITION,
)


class NoProbe:
    """A session whose Status probe fails the test: no probe is due where no rerun can be."""

    @property
    def stubs(self) -> Any:
        raise AssertionError("probed the parties although no rerun was possible")


def _replies(refusing: tuple[str, ...] = ()) -> dict[str, pb.OpenSessionReply]:
    return {h.name: pb.OpenSessionReply(allow_exclusion=h.name not in refusing) for h in HOPS}


def _failure(attempt: Attempt, raised: PartyFailure) -> str:
    with pytest.raises(PartyFailure) as failure, attempt.watching(NoProbe(), 1.0):  # type: ignore[arg-type]
        raise raised
    message = str(failure.value)
    assert "\n" not in message and message.startswith(str(raised))
    assert failure.value.party == raised.party and failure.value.code == raised.code
    return message


def test_a_party_that_did_not_opt_in_is_named_when_another_drops_out() -> None:
    attempt = Attempt(list(HOPS))
    notice = attempt.opened(_replies(("hospital-2",)), RingSettings(sum_mode="pairwise"))
    assert notice is None and not attempt.allowed
    message = _failure(attempt, GONE)
    assert "no rerun without hospital-3" in message
    assert "hospital-2 does not allow exclusion" in message


@pytest.mark.parametrize(
    ("sum_mode", "union_mode", "named"),
    [("ring", "shuffle", "sum_mode"), ("pairwise", "layered", "[union] mode")],
)
def test_a_job_that_cannot_rerun_says_so_at_the_handshake_and_fails_at_once(
    sum_mode: str, union_mode: str, named: str
) -> None:
    """Every party opted in, but the job forwards along the ring: one line at the handshake,
    and the dropout fails the job at once, naming the gone party and the modes."""
    attempt = Attempt(list(HOPS))
    notice = attempt.opened(_replies(), RingSettings(sum_mode=sum_mode, union_mode=union_mode))
    assert notice is not None and "\n" not in notice and named in notice
    assert not attempt.allowed
    message = _failure(attempt, GONE)
    assert "no rerun without hospital-3" in message and named in message


def test_a_refusal_or_a_federation_without_consent_keeps_its_failure_as_it_was() -> None:
    """A party that still answers did not drop out: nothing is added; nor where no party
    opted in (the default: exclusion is nobody's business then)."""
    attempt = Attempt(list(HOPS))
    attempt.opened(_replies(("hospital-2",)), RingSettings(sum_mode="pairwise"))
    assert _failure(attempt, REFUSED) == str(REFUSED)
    nobody = Attempt(list(HOPS))
    nobody.opened(_replies(tuple(h.name for h in HOPS)), RingSettings(sum_mode="pairwise"))
    assert _failure(nobody, GONE) == str(GONE)
