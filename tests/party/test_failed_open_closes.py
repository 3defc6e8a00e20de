"""A handshake that fails after its session was built closes that session (#28, h-abort).

The real LKC handler opens its session (counting state over the party's table) and then joins
the ring, which fails when the ring names another next hop than the party's configuration, or
on an unexpected error while drawing the keys. Whatever the failure, the built session's
counting state is closed, the refusal is one line, and a session the party held (its lease
lapsed, so the new one would have replaced it) stays held and open.

In process: the shell is the real servicer with the real handlers; the counting engine is the
real local one, which records the states it opened and closed.
"""

from __future__ import annotations

from typing import Any

import pytest

from fedanon.algorithms.randomization.jobspec import RandomizeSpec
from fedanon.algorithms.tds.engines import EngineSettings
from fedanon.algorithms.tds.engines.base import LocalEngine, PartyCounts
from fedanon.federation.config import Hop
from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.federation.randomize_job import spec_to_proto
from fedanon.party import ring
from fedanon.party.servicer import PartyServicer
from fedanon.party.session_base import SessionBase
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.distributed.conftest import Dataset, hospital_dataset
from tests.party.fakes import Aborted, Context, party_config

HELD, FAILING = "a1" * 16, "b2" * 16
LEASE = 30.0


class RecordingEngine(LocalEngine):
    """The local counting engine, noting every counting state it opened and which were closed."""

    def __init__(self) -> None:
        super().__init__(EngineSettings())
        self.opened: list[PartyCounts] = []
        self.closed: list[PartyCounts] = []

    def open(self, schema: Any, source: Any, columns: list[str]) -> PartyCounts:
        counts = super().open(schema, source, columns)
        close = counts.close

        def closing() -> None:
            self.closed.append(counts)
            close()

        counts.close = closing  # type: ignore[method-assign]
        self.opened.append(counts)
        return counts


@pytest.fixture(scope="module")
def data() -> Dataset:
    return hospital_dataset(300, seed=3)


def _party(data: Dataset, engine: RecordingEngine) -> PartyServicer:
    config = party_config(
        "hospital-b", lease_seconds=LEASE, next_hop=Hop("hospital-c", "127.0.0.1:9")
    )
    return PartyServicer(config, data.table, data.taxonomy, None, None, None, counting=engine)


def _request(data: Dataset, session_id: str, ring_: list[str]) -> pb.OpenSessionRequest:
    spec = data.spec(L=2, K=5, C="0.6")
    request = pb.OpenSessionRequest(lkc=lkc_job_to_proto(spec), ring=ring_)
    request.ref.session_id = session_id
    request.sum_mode = pb.SUM_MODE_PAIRWISE
    return request


def _held_and_lapsed(party: PartyServicer, data: Dataset) -> SessionBase:
    """Open a session the party holds, then let its lease lapse (its clock moved back)."""
    party.OpenSession(_request(data, HELD, ["hospital-b", "hospital-c"]), Context())
    held = party.session
    assert held is not None and held.session_id == HELD
    held.last_seen -= LEASE + 1
    return held


def _assert_refused_and_closed(
    party: PartyServicer,
    engine: RecordingEngine,
    held: SessionBase,
    request: pb.OpenSessionRequest,
) -> str:
    context = Context()
    with pytest.raises(Aborted):
        party.OpenSession(request, context)
    detail = context.details() or ""
    assert detail.startswith("party hospital-b refused: ") and "\n" not in detail
    # Two counting states were built (the held session's, the failed one's): only the failed
    # one is closed, and the held session is still the party's, open.
    assert len(engine.opened) == 2
    assert engine.closed == [engine.opened[1]]
    assert party.session is held
    assert not held.ended
    return detail


def test_a_ring_naming_another_next_hop_closes_the_built_session(data: Dataset) -> None:
    engine = RecordingEngine()
    party = _party(data, engine)
    held = _held_and_lapsed(party, data)
    request = _request(data, FAILING, ["hospital-b", "hospital-d"])
    detail = _assert_refused_and_closed(party, engine, held, request)
    assert "ring says the next hop is 'hospital-d'" in detail


def test_an_unexpected_error_while_joining_closes_it_and_is_refused_in_one_line(
    data: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = RecordingEngine()
    party = _party(data, engine)
    held = _held_and_lapsed(party, data)

    def broken(*_args: object) -> object:
        raise RuntimeError("the key generator broke")

    monkeypatch.setattr(ring, "new_share", broken)
    context_detail = _assert_refused_and_closed(
        party, engine, held, _request(data, FAILING, ["hospital-b", "hospital-c"])
    )
    assert context_detail.endswith("RuntimeError: the key generator broke")
    assert party.sessions_served == 1


def test_the_party_opens_the_next_job_after_a_failed_one(data: Dataset) -> None:
    """The failed handshake leaves nothing held: the next valid job opens (its lease lapsed
    session replaced), and only then is the held one closed."""
    engine = RecordingEngine()
    party = _party(data, engine)
    held = _held_and_lapsed(party, data)
    with pytest.raises(Aborted):
        party.OpenSession(_request(data, FAILING, ["hospital-b", "hospital-d"]), Context())
    reply = party.OpenSession(_request(data, "c3" * 16, ["hospital-b", "hospital-c"]), Context())
    assert reply.party == "hospital-b" and party.session is not None
    assert party.session.session_id == "c3" * 16 and held.ended
    assert engine.closed == [engine.opened[1], engine.opened[0]]  # the failed one at once


def test_an_eviction_that_fails_closes_the_new_session_and_refuses_in_one_line(
    data: Dataset,
) -> None:
    """The held session's lease lapsed, but closing it fails (its counting state cannot be
    released): the new session, already built, is closed too, the handshake is refused in one
    line, and the next job opens."""
    engine = RecordingEngine()
    party = _party(data, engine)
    _held_and_lapsed(party, data)
    held_counts = engine.opened[0]

    def broken() -> None:
        raise RuntimeError("the counting state could not be released")

    held_counts.close = broken  # type: ignore[method-assign]
    context = Context()
    with pytest.raises(Aborted):
        party.OpenSession(_request(data, FAILING, ["hospital-b", "hospital-c"]), context)
    assert context.details() == (
        "party hospital-b refused: RuntimeError: the counting state could not be released"
    )
    assert engine.closed == [engine.opened[1]]
    reply = party.OpenSession(_request(data, "c3" * 16, ["hospital-b", "hospital-c"]), Context())
    assert reply.party == "hospital-b" and party.session is not None
    assert party.session.session_id == "c3" * 16


def _kind_request(data: Dataset, kind: str) -> pb.OpenSessionRequest:
    """A job of `kind` whose ring names 'hospital-d' as this party's next hop."""
    if kind == "lkc":
        return _request(data, FAILING, ["hospital-b", "hospital-d"])
    spec = RandomizeSpec(("sex",), (("Female", "Male"),), "ra", None, "uniform", False)
    request = pb.OpenSessionRequest(
        randomize=spec_to_proto(spec), ring=["hospital-b", "hospital-d"]
    )
    request.ref.session_id = FAILING
    request.sum_mode = pb.SUM_MODE_PAIRWISE
    return request


@pytest.mark.parametrize("kind", ["lkc", "randomize"])
def test_every_ring_kind_closes_the_session_its_failed_join_built(
    data: Dataset, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the kind, the session its handler built before the ring join failed is closed
    (its ``close`` ran: every kind's close ends in SessionBase's, observed here)."""
    closed: list[SessionBase] = []
    close = SessionBase.close

    def observed(session: SessionBase) -> None:
        closed.append(session)
        close(session)

    monkeypatch.setattr(SessionBase, "close", observed)
    party = _party(data, RecordingEngine())
    context = Context()
    with pytest.raises(Aborted):
        party.OpenSession(_kind_request(data, kind), context)
    assert "ring says the next hop is 'hospital-d'" in (context.details() or "")
    assert [(s.kind, s.session_id, s.ended) for s in closed] == [(kind, FAILING, True)]
    assert party.session is None
