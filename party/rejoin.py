"""Rejoin by replay at the party: seal a session once its keys are shared, restore it after a
restart when the leader asks (docs/distributed.md, "Rejoin").

A daemon that died mid-session (killed, crashed, its host restarted) comes back with its table
reloaded but no session. Its sealed file (party/session_store.py) still holds the handshake, the
key shares and its own private keys. The leader, finding the party unreachable, waits for it
(bounded) and sends ``Rejoin`` with the specializations so far; the party reopens the session
from the sealed handshake, puts its old keys back (its pairwise masks, union layer and sealed
totals are then the ones the others expect), accepts the sealed key shares again and replays
the instructions against its table. The leader then sends the interrupted secure sum again.

Until the leader's ``Rejoin`` comes, the session's other messages are refused as
``UNAVAILABLE`` ("awaits rejoin"): to the leader, and to a ring predecessor that relays it, the
party is still missing, which is what makes the leader rejoin it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Protocol

import grpc

from fedanon.crypto.errors import CryptoError
from fedanon.errors import FedanonError
from fedanon.party import ring
from fedanon.party.errors import NotExpected
from fedanon.party.handler import Admissions, JobHandler
from fedanon.party.policy import admit
from fedanon.party.session_base import RingSession, SessionBase
from fedanon.party.session_store import SealedSession, SessionStore
from fedanon.party.shell import PartyShell
from fedanon.protos import fedanon_v1_pb2 as pb

log = logging.getLogger(__name__)


class RejoinShell(PartyShell, Protocol):
    """What a rejoin uses of the servicer (party/servicer.py), which imports this module."""

    store: SessionStore
    session: SessionBase | None
    lock: threading.Lock
    handlers: Mapping[str, JobHandler]
    secure: bool

    def aborted_note(self, session_id: str) -> str: ...


def seal(shell: RejoinShell, session: RingSession, request: pb.ShareKeysRequest) -> None:
    """After ``ShareKeys``: seal what a restart needs (only kinds that can replay)."""
    opened_by = session.opened_by
    if not shell.store.enabled or not session.replays or opened_by is None:
        return
    state = SealedSession(
        session.session_id,
        opened_by,
        request,
        session.union.private_key,
        session.sums.key,
        strip_secret=session.union.strip_secret,
        inputs=shell.store.inputs,
    )
    try:
        shell.store.save(state)
    except (OSError, FedanonError) as exc:  # the session runs on; a restart cannot resume it
        # (FedanonError: a link in the file's place, which is never written through)
        log.warning(
            "cannot seal session %s (%s): no rejoin after a restart", state.session_id[:12], exc
        )
        return
    _seal_answers(shell, session)


def _seal_answers(shell: RejoinShell, session: RingSession) -> None:
    """Seal each iteration the session applies before its answer leaves (LKCSession.chain),
    and the union's progress before its outputs leave (the round whose records left sealed,
    the batch peeled: party/union.py); a failure to write ends the session's ability to
    rejoin, never the session."""
    store, sid = shell.store, session.session_id

    def sealing(what: str, **changes: object) -> None:
        try:
            store.update(sid, **changes)
        except (OSError, FedanonError) as exc:
            log.warning("cannot seal %s of %s (%s): no rejoin", what, sid[:12], exc)
            store.clear(sid)

    session.on_applied = lambda count, chain: sealing(
        f"iteration {count}", applied=count, chain=chain
    )
    session.union.on_collected = lambda round_: sealing(
        f"union round {round_}'s records", collected=round_
    )
    session.union.on_peeled = lambda round_, digest: sealing(
        f"union round {round_}'s strip", stripped_round=round_, stripped_digest=digest
    )


def awaiting(shell: RejoinShell, session_id: str) -> str | None:
    """The refusal for a message of a session this restarted party holds sealed, or None."""
    if shell.session is not None or shell.store.waiting(session_id) is None:
        return None
    return f"restarted; session {session_id[:12]} awaits its leader's rejoin"


def serve(
    shell: RejoinShell, request: pb.RejoinRequest, context: grpc.ServicerContext
) -> pb.RejoinReply:
    """Answer the leader's ``Rejoin`` (the caller is authorized): confirm an open session is at
    the iteration the leader resumes, or restore the sealed one and replay the log."""
    sid, iteration = request.ref.session_id, request.ref.iteration
    name = shell.config.name
    with shell.lock:
        session = shell.session
        if session is not None and session.session_id == sid and not session.ended:
            # Never went away (the leader only failed to reach it): nothing to replay; the
            # resent sum is answered from the replay cache if it had arrived.
            wrong = session.wrong_attempt(request.ref, "rejoin")
            if wrong is not None:
                shell.refuse(context, grpc.StatusCode.FAILED_PRECONDITION, wrong)
            if session.next_iteration not in (iteration, iteration + 1):
                shell.refuse(
                    context,
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"rejoin at iteration {iteration}, but the session is at "
                    f"{session.next_iteration}",
                )
            session.touch()
            if request.union_round:
                _restart_union(shell, session, request, context)
            return pb.RejoinReply(party=name, restored=False)
        state = shell.store.claim(sid)
        if state is None:
            shell.refuse(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"cannot rejoin session {sid[:12]}: no sealed state for it (no state_dir, "
                "a restart after its lease, or another session since)"
                f"{shell.aborted_note(sid)}",
            )
        assert state is not None
        # refused, its file goes at the session's abort or a lease after this claim
        shell.session = _restore(shell, state, request, context)
        shell.idle_keys.busy()
    return pb.RejoinReply(party=name, restored=True)


def _restart_union(
    shell: RejoinShell,
    session: SessionBase,
    request: pb.RejoinRequest,
    context: grpc.ServicerContext,
) -> None:
    """The leader starts the union again after a lost party rejoined: every party, at the end
    of the specialization, drops the interrupted union and expects round `union_round`."""
    try:
        if not isinstance(session, RingSession) or not session.replays:
            raise FedanonError(f"a {session.kind} session cannot restart its union")
        if session.next_iteration != request.ref.iteration:
            raise NotExpected(
                f"union restart at iteration {request.ref.iteration}, but the session is at "
                f"{session.next_iteration}"
            )
        session.restart_union(request.union_round)
    except FedanonError as exc:
        shell.reject(context, exc, prefix="cannot restart the union: ")
    log.info("union restarts as round %d", request.union_round)


def _rerun_again(
    shell: RejoinShell, session: RingSession, state: SealedSession, request: pb.RejoinRequest
) -> None:
    """The attempt switch of a rerun the party had made before its restart, replayed before
    the attempt's log: the leader's rejoin must name the sealed attempt and roster."""
    ring_ = list(request.rerun_ring)
    if request.ref.attempt != state.attempt or ring_ != list(state.rerun_ring):
        raise FedanonError(
            f"the leader resumes attempt {request.ref.attempt} among {ring_ or 'the session'}, "
            f"this party had sealed attempt {state.attempt} among "
            f"{list(state.rerun_ring) or 'the session'}"
        )
    if state.attempt:
        session.rekey(state.attempt, ring_, shell.config.name)


def _restore(
    shell: RejoinShell,
    state: SealedSession,
    request: pb.RejoinRequest,
    context: grpc.ServicerContext,
) -> RingSession:
    """The sealed session reopened with its old keys, at the leader's iteration."""
    if state.inputs != shell.store.inputs:
        # the files are named in this party's log only: its paths are none of the leader's
        log.warning(
            "%s or %s changed since session %s was sealed: its rejoin is refused",
            shell.config.data,
            shell.config.taxonomy,
            state.session_id[:12],
        )
        shell.refuse(
            context,
            grpc.StatusCode.FAILED_PRECONDITION,
            "cannot rejoin: its table, taxonomy or delimiter changed since the session began "
            "(the release would not be the job's)",
        )
    caller = shell.config.leader if shell.secure else None
    admit(  # the policy read at this start must still admit the job
        context,
        shell.config.policy,
        state.open_request,
        shell.config.name,
        shell.config.leader,
        caller,
        list(shell.source.columns),
        Admissions(shell.handlers),
    )
    handler = shell.handlers.get(state.open_request.WhichOneof("job") or "")
    try:
        if handler is None:
            raise FedanonError("this daemon has no handler for the sealed job kind")
        opened = handler.open(shell, state.open_request).session
    except (FedanonError, CryptoError) as exc:
        shell.refuse(context, grpc.StatusCode.FAILED_PRECONDITION, f"cannot rejoin: {exc}")
    try:  # a refused rejoin closes what it opened (its counting state, its union's workers)
        return _resume(shell, opened, state, request, context)
    except BaseException:
        opened.close()
        raise


def _resume(
    shell: RejoinShell,
    session: SessionBase,
    state: SealedSession,
    request: pb.RejoinRequest,
    context: grpc.ServicerContext,
) -> RingSession:
    """The reopened `session` with its sealed keys, its attempt and its log replayed up to the
    leader's iteration, its answers sealed; refuses the rejoin in one line otherwise."""
    try:
        if not isinstance(session, RingSession) or not session.replays:
            raise FedanonError(f"a {session.kind} session cannot rejoin")
        session.opened_by = state.open_request
        session.union.private_key = state.union_key
        session.union.strip_secret = state.strip_secret
        session.union.sealed_collect = state.collected
        session.union.sealed_strip = (state.stripped_round, state.stripped_digest)
        session.sums.key = state.sum_key
    except (FedanonError, CryptoError) as exc:
        shell.refuse(context, grpc.StatusCode.FAILED_PRECONDITION, f"cannot rejoin: {exc}")
    ring.share_keys(shell, session, state.share_keys, context)
    try:
        _rerun_again(shell, session, state, request)
        session.replay(
            list(request.instructions),
            (state.applied, state.chain),
            request.prefix_probe if request.HasField("prefix_probe") else None,
            request.prefix_adopt if request.HasField("prefix_adopt") else None,
        )
        if session.next_iteration != request.ref.iteration:
            raise FedanonError(
                f"{len(request.instructions)} instructions replayed, but the leader resumes "
                f"at iteration {request.ref.iteration}"
            )
    except (FedanonError, CryptoError, ValueError, IndexError) as exc:
        shell.refuse(context, grpc.StatusCode.FAILED_PRECONDITION, f"cannot rejoin: {exc}")
    _seal_answers(shell, session)
    return session
