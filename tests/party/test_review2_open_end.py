"""Session 13 review (h-review2) of a handshake that fails late and of ``End`` for a session
a restarted party holds sealed.

- A step of installing the opened session that raises (idle key generation that cannot be
  told, a sealed file that cannot be deleted) leaves the party holding no session that did
  not open, counted served only once held.
- A directory put in the sealed file's place (which start-up leaves, docs: session_store.py)
  never keeps the daemon from opening sessions.
- An ``End`` of an earlier attempt is stale for a party restarted from a freeze or a crash
  whose session waits sealed for its rejoin as it is for one holding the session open: it
  neither ends it nor deletes its sealed file.

In process: the real servicer, handlers, session store and local counting engine.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import grpc
import pytest

from fedanon.crypto.identity import Identity, create_ca, issue_identity
from fedanon.errors import FedanonError
from fedanon.party.handler import Opened
from fedanon.party.handlers import HANDLERS
from fedanon.party.servicer import PartyServicer
from fedanon.party.session_store import FILE_NAME, SessionStore
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.distributed.conftest import Dataset, hospital_dataset
from tests.party.fakes import Aborted, Context
from tests.party.test_failed_open_closes import (
    FAILING,
    HELD,
    LEASE,
    RecordingEngine,
    _held_and_lapsed,
    _party,
    _request,
)
from tests.party.test_session_store import SESSION, sealed_state

RING = ["hospital-b", "hospital-c"]


@pytest.fixture(scope="module")
def data() -> Dataset:
    return hospital_dataset(300, seed=3)


@pytest.fixture(scope="module")
def me() -> Identity:
    return issue_identity(create_ca(), "hospital-b", "party")


def _broken_pipe() -> None:
    raise BrokenPipeError(32, "Broken pipe")


def _status(party: PartyServicer) -> pb.StatusReply:
    return party.Status(pb.StatusRequest(), Context())


@pytest.mark.parametrize("held", ["none held", "a lapsed one held"])
def test_a_failing_install_leaves_no_session_held_that_did_not_open(
    data: Dataset, held: str
) -> None:
    engine = RecordingEngine()
    party = _party(data, engine)
    lapsed = _held_and_lapsed(party, data) if held != "none held" else None
    served = party.sessions_served
    party.idle_keys.busy = _broken_pipe  # type: ignore[method-assign]
    context = Context()
    with pytest.raises(Aborted):
        party.OpenSession(_request(data, FAILING, RING), context)
    detail = context.details() or ""
    assert detail == "party hospital-b refused: BrokenPipeError: [Errno 32] Broken pipe"
    assert context.code() == grpc.StatusCode.INTERNAL
    # The refused session is closed and not held; an evicted one is gone (its lease lapsed).
    assert engine.closed[-1] is engine.opened[-1]
    assert party.session is None
    assert _status(party).session_id == ""
    assert party.sessions_served == served
    if lapsed is not None:
        assert lapsed.ended


def test_a_directory_in_the_sealed_files_place_never_stops_a_session_opening(
    data: Dataset, me: Identity, tmp_path: Path
) -> None:
    (tmp_path / FILE_NAME).mkdir()
    party = _party(data, RecordingEngine())
    party.store = SessionStore(tmp_path, me, LEASE)
    for session_id in (HELD, FAILING):  # the first, and one evicting it
        if party.session is not None:
            party.session.last_seen -= LEASE + 1
        reply = party.OpenSession(_request(data, session_id, RING), Context())
        assert reply.party == "hospital-b"
        assert party.session is not None and party.session.session_id == session_id
    assert party.sessions_served == 2
    assert (tmp_path / FILE_NAME).is_dir()


def _restarted_with_sealed(
    data: Dataset, me: Identity, directory: Path, attempt: int
) -> PartyServicer:
    """A party restarted with session SESSION sealed at `attempt`, awaiting its rejoin."""
    SessionStore(directory, me, LEASE).save(dataclasses.replace(sealed_state(), attempt=attempt))
    party = _party(data, RecordingEngine())
    party.store = SessionStore(directory, me, LEASE)
    assert party.store.pending is not None
    return party


def _end(attempt: int, abort: bool = True) -> pb.EndRequest:
    return pb.EndRequest(
        ref=pb.SessionRef(session_id=SESSION, attempt=attempt), abort=abort, reason="x"
    )


def test_a_stale_end_keeps_the_sealed_session_a_restarted_party_awaits(
    data: Dataset, me: Identity, tmp_path: Path
) -> None:
    party = _restarted_with_sealed(data, me, tmp_path, attempt=2)
    for stale in (0, 1):
        context = Context()
        with pytest.raises(Aborted):
            party.End(_end(stale, abort=stale == 0), context)
        assert context.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert f"attempt {stale} is stale (the session is at attempt 2)" in (
            context.details() or ""
        )
        assert (tmp_path / FILE_NAME).is_file()
        assert party.store.waiting(SESSION) is not None
    abort = _end(2)
    abort.reason = "excluded:\x1b[2J the session\n goes on"
    party.End(abort, Context())  # the attempt's own abort: the file goes
    assert not (tmp_path / FILE_NAME).exists()
    assert party.store.waiting(SESSION) is None
    # and a later message of the session says why, in one line of printable text
    context = Context()
    with pytest.raises(Aborted):
        party.Sum(pb.SumRequest(ref=pb.SessionRef(session_id=SESSION, attempt=2)), context)
    assert (context.details() or "").endswith(
        "; its leader aborted it here: excluded:\\x1b[2J the session goes on)"
    )


def test_an_end_of_a_later_attempt_or_another_session_is_not_stale(
    data: Dataset, me: Identity, tmp_path: Path
) -> None:
    """The leader's abort of an attempt the party never reached ends it (leader/farewell.py);
    an ``End`` naming another session leaves this one's file."""
    party = _restarted_with_sealed(data, me, tmp_path, attempt=1)
    other = pb.EndRequest(ref=pb.SessionRef(session_id="cd" * 16, attempt=0), abort=True)
    party.End(other, Context())
    assert (tmp_path / FILE_NAME).is_file()
    party.End(_end(3), Context())
    assert not (tmp_path / FILE_NAME).exists()


class _RpcFailure(grpc.RpcError):
    """A gRPC error as a client call raises it: its text spans lines."""

    def __str__(self) -> str:
        return "<_InactiveRpcError of RPC that terminated with:\n\tstatus = UNAVAILABLE\n>"


@pytest.mark.parametrize(
    "error",
    [KeyboardInterrupt(), MemoryError(), _RpcFailure(), FedanonError("two\nlines")],
    ids=["KeyboardInterrupt", "MemoryError", "RpcError", "FedanonError"],
)
@pytest.mark.parametrize("held", ["none held", "a lapsed one held"])
def test_whatever_a_handlers_open_raises_is_one_audited_line_and_changes_nothing(
    data: Dataset,
    error: BaseException,
    held: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = RecordingEngine()
    party = _party(data, engine)
    lapsed = _held_and_lapsed(party, data) if held != "none held" else None
    served = party.sessions_served

    def failing(_shell: object, _request: pb.OpenSessionRequest) -> Opened:
        raise error

    party.handlers = {**HANDLERS, "lkc": dataclasses.replace(HANDLERS["lkc"], open=failing)}
    context = Context()
    with caplog.at_level(logging.INFO, logger="fedanon.party.policy"):
        caplog.clear()  # the held session's own audit line (a logger left at INFO shows it)
        try:
            party.OpenSession(_request(data, FAILING, RING), context)
        except Aborted:
            pass
        except BaseException as escaped:  # an interrupt too: it must not end the test run
            pytest.fail(f"the handshake's failure escaped the servicer: {escaped!r}")
        else:
            pytest.fail("the handshake was not refused")
    detail = context.details() or ""
    assert detail.startswith("party hospital-b refused: ") and "\n" not in detail
    audits = [r.getMessage() for r in caplog.records if r.getMessage().startswith("audit: ")]
    assert len(audits) == 1 and audits[0].startswith("audit: job refused")
    assert party.session is lapsed  # held as it was (its lease lapsed: a later job evicts it)
    assert lapsed is None or not lapsed.ended
    assert party.sessions_served == served
    assert _status(party).session_id == (HELD if lapsed is not None else "")
