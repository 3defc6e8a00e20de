"""The party's side of an LKC rerun without excluded parties (federation/exclusion.py).

A rerun is the next attempt of the open session (the leader's ``Rerun``): the same session id
and keys, the survivors' roster, masks and union contexts bound to the new attempt. A party
moves to it only if the message comes from the session's leader, names exactly the next
attempt and a roster that is the current one less at least one party (same order, no new
name, this party in it, at least ``MIN_SURVIVORS``), and its own policy allows exclusion
(``[policy] allow_exclusion``): the leader asks for a rerun only when every party's handshake
said so, and this check keeps a party that did not opt in out of one whatever the leader does.
A rerun's ring is a roster only (the configured next hop may be the party that dropped out), so
the session forwards nothing: its sum must be pairwise, and party/ring.py refuses the layered
union's STRIP, and only in it does an LKC session take a prefix probe or adoption.

A handshake cannot name excluded parties (``OpenSessionRequest`` has no such field since
the rerun became an attempt): a rerun is reached through ``Rerun`` and its checks only.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

import grpc

from fedanon.errors import FedanonError
from fedanon.federation.exclusion import rerun_refusal
from fedanon.party.session_base import RingSession, SessionBase
from fedanon.party.session_store import SessionStore
from fedanon.party.shell import PartyShell
from fedanon.protos import fedanon_v1_pb2 as pb

log = logging.getLogger(__name__)


class RerunShell(PartyShell, Protocol):
    """What a rerun uses of the servicer (party/servicer.py), which imports this module."""

    store: SessionStore
    session: SessionBase | None
    lock: threading.Lock

    def aborted_note(self, session_id: str) -> str: ...


def _allows_exclusion(shell: PartyShell, excluded: list[str]) -> None:
    if not shell.config.policy.allow_exclusion:
        raise FedanonError(
            f"a rerun without {', '.join(excluded)}: its policy does not allow exclusion "
            "(allow_exclusion = false)"
        )


def rerun(shell: RerunShell, request: pb.RekeyRerunRequest, context: grpc.ServicerContext) -> None:
    """Move the open session to the rerun's attempt (the caller is the leader), or refuse in
    one line naming the attempt; the switch is sealed (a rejoin replays it) before the answer
    leaves."""
    me, ring = shell.config.name, list(request.ring)
    with shell.lock:
        session = shell.session
        if session is None or session.session_id != request.ref.session_id or session.ended:
            shell.refuse(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"rerun (attempt {request.ref.attempt}): session "
                f"{request.ref.session_id[:12]} is not open here"
                f"{shell.aborted_note(request.ref.session_id)}",
            )
        assert session is not None
        try:
            if not isinstance(session, RingSession) or not session.reruns:
                raise FedanonError(f"a {session.kind} session cannot rerun")
            if not session.sums.reruns:
                raise FedanonError("a rerun without excluded parties needs the pairwise sum")
            excluded = [name for name in session.ring if name not in ring]
            _allows_exclusion(shell, excluded or list(request.excluded))
            refusal = rerun_refusal(session.ring, session.attempt, request.ref.attempt, ring, me)
            if refusal is not None:
                raise FedanonError(refusal)
            if sorted(request.excluded) != sorted(excluded):
                raise FedanonError(
                    "the rerun's excluded parties are not those its roster leaves out"
                )
            session.rekey(request.ref.attempt, ring, me)
        except FedanonError as exc:
            shell.refuse(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"rerun (attempt {request.ref.attempt}) refused: {exc}",
            )
        session.touch()
        shell.store.update(
            session.session_id,
            attempt=session.attempt,
            rerun_ring=tuple(ring),
            applied=0,
            chain=session.chain,
        )
    log.info(
        "attempt %d: rerun without %s (the same session and keys; this party allows exclusion)",
        session.attempt,
        ", ".join(excluded),
        extra={"session": session.session_id[:12], "iteration": 0},
    )
