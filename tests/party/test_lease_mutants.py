"""The session lease of the party shell (party/servicer.py, party/session_base.py), in process.

A party holds one session at a time. Every message of the session's leader renews its lease;
a second OpenSession is refused while the lease runs (and the refusal changes nothing), and
replaces the session once the lease lapsed. Only messages naming the open session act on it.
The idle-key workers stop generating while a session runs and resume when it ends.

The job kind is a stand-in (registered as "drbt" so that the policy reads its request), so
these tests exercise the shell alone; a lapse is simulated by moving the session's last-heard
time back by more than the lease, never by sleeping.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import grpc
import pandas as pd
import pytest

from fedanon.party.handler import JobHandler, Opened
from fedanon.party.policy import drbt_request
from fedanon.party.servicer import PartyServicer
from fedanon.party.session_base import SessionBase
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.party.fakes import Aborted, Context, party_config

LEASE = 30.0
FIRST, SECOND, STRANGER = "a1" * 16, "b2" * 16, "c3" * 16


class Session(SessionBase):
    kind = "drbt"


def _open(_shell: object, request: pb.OpenSessionRequest) -> Opened:
    return Opened(Session(request.ref.session_id), [], pb.OpenSessionReply())


class KeyWorkers:
    """Records what the shell tells the idle-key workers."""

    def __init__(self) -> None:
        self.told: list[str] = []

    def busy(self) -> None:
        self.told.append("busy")

    def idle(self) -> None:
        self.told.append("idle")


@pytest.fixture
def party() -> PartyServicer:
    config = party_config(lease_seconds=LEASE)
    table = pd.DataFrame({"patient_id": ["1", "2"], "age": ["30", "40"]})
    servicer = PartyServicer(
        config,
        table,
        None,
        None,
        None,
        None,
        handlers={"drbt": JobHandler("drbt", Session, drbt_request, _open)},
    )
    servicer.idle_keys = KeyWorkers()  # type: ignore[assignment]
    return servicer


def opening(session_id: str) -> pb.OpenSessionRequest:
    return pb.OpenSessionRequest(
        ref=pb.SessionRef(session_id=session_id),
        drbt=pb.DRBTJob(id_column="patient_id", matrix="sparse"),
        ring=["hospital-a", "hospital-b"],
    )


def open_session(party: PartyServicer, session_id: str) -> pb.OpenSessionReply:
    return party.OpenSession(opening(session_id), Context())


def refused(call: Callable[[Any, Context], Any], request: Any) -> grpc.StatusCode | None:
    """The status `call` ends with (it must end with a refusal)."""
    context = Context()
    with pytest.raises(Aborted):
        call(request, context)
    return context.code()


def told(party: PartyServicer) -> list[str]:
    """What the shell told its idle-key workers so far."""
    return cast(KeyWorkers, party.idle_keys).told


def lapse(party: PartyServicer) -> None:
    """Make the open session's leader silent for longer than the lease."""
    assert party.session is not None
    party.session.last_seen -= LEASE + 1


def state(party: PartyServicer) -> tuple[str | None, str, int]:
    session = party.session
    return (session.session_id if session else None, party.last_error, party.sessions_served)


def test_a_second_leader_is_refused_while_the_lease_runs_and_nothing_changes(
    party: PartyServicer,
) -> None:
    open_session(party, FIRST)
    before = state(party)
    code = refused(party.OpenSession, opening(SECOND))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert state(party) == before == (FIRST, "", 1)


def test_a_lapsed_session_is_replaced_by_the_next_leader(party: PartyServicer) -> None:
    open_session(party, FIRST)
    lapse(party)
    open_session(party, SECOND)
    session_id, last_error, served = state(party)
    assert (session_id, served) == (SECOND, 2)
    assert "evicted" in last_error and "lease lapsed" in last_error


def test_a_heartbeat_of_the_open_session_renews_its_lease(party: PartyServicer) -> None:
    open_session(party, FIRST)
    lapse(party)
    party.Renew(pb.RenewRequest(ref=pb.SessionRef(session_id=FIRST)), Context())
    assert refused(party.OpenSession, opening(SECOND)) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert state(party)[0] == FIRST


def test_a_heartbeat_naming_another_session_is_refused_and_renews_nothing(
    party: PartyServicer,
) -> None:
    open_session(party, FIRST)
    lapse(party)
    renew = pb.RenewRequest(ref=pb.SessionRef(session_id=STRANGER))
    assert refused(party.Renew, renew) == grpc.StatusCode.FAILED_PRECONDITION
    open_session(party, SECOND)  # the first session's lease lapsed all the same
    assert state(party)[0] == SECOND


def test_end_naming_another_session_leaves_the_open_one_running(party: PartyServicer) -> None:
    open_session(party, FIRST)
    party.End(pb.EndRequest(ref=pb.SessionRef(session_id=STRANGER)), Context())
    assert state(party) == (FIRST, "", 1)
    assert told(party) == ["busy"]


def test_key_generation_stops_for_a_session_and_resumes_after_it(party: PartyServicer) -> None:
    open_session(party, FIRST)
    assert told(party) == ["busy"]
    party.End(pb.EndRequest(ref=pb.SessionRef(session_id=FIRST)), Context())
    assert told(party) == ["busy", "idle"]
    assert party.session is None
    open_session(party, SECOND)  # an ended session holds no lease
    assert state(party) == (SECOND, "", 2)
