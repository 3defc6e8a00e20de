"""The ring protocol's steps at a party, for every ring session (LKC and randomization).

Opening: the ring must continue at this party's configured next hop; the party draws its union
key and the keys its secure-sum protocol needs and hands their shares to the leader.
``ShareKeys``: the federation's verified shares become the union route (and, for the pairwise
sum, the pairwise masks). ``Sum``: the session's protocol (party/sums.py) answers; a retried hop
gets the first answer (party/replay.py). The secure set union's step is party/union.py's.
"""

from __future__ import annotations

import logging

import grpc

from fedanon.crypto.errors import CryptoError
from fedanon.crypto.keyshare import ONION_UNION
from fedanon.errors import FedanonError
from fedanon.federation.keyshares import new_share, union_route
from fedanon.party.errors import NotExpected
from fedanon.party.handler import PartyShell
from fedanon.party.session_base import RingSession
from fedanon.party.union import UnionRole
from fedanon.protos import fedanon_v1_pb2 as pb

log = logging.getLogger(__name__)


def join_ring(shell: PartyShell, session: RingSession) -> list[pb.KeyShare]:
    """Check the ring against this party's next hop, draw the session's keys; their shares."""
    config = shell.config
    configured = config.next_hop.name if config.next_hop else None
    if session.successor is not None and session.successor != configured:
        raise FedanonError(
            f"ring says the next hop is '{session.successor}' but this party is "
            f"configured to forward to '{configured}'"
        )
    sid = bytes.fromhex(session.session_id)
    private, share = new_share(shell.identity, config.name, "party", sid, ONION_UNION)
    session.union = UnionRole(private, session.position, config.union_parallelism, shell.idle_keys)
    return [share, *session.sums.key_shares(shell.identity, config.name, sid)]


def share_keys(
    shell: PartyShell,
    session: RingSession,
    request: pb.ShareKeysRequest,
    context: grpc.ServicerContext,
) -> pb.ShareKeysReply:
    """Verify the federation's key shares: the union route, then the sum protocol's keys."""
    sid = bytes.fromhex(session.session_id)
    try:
        if session.union.route is not None:  # a replay must not swap the keys mid-session
            raise NotExpected("the session's key shares were already accepted")
        session.union.route = union_route(request.keys, session.ring, sid, shell.ca_certificate)
        if request.prepare_union:
            session.union.prepare(request.prepare_items or shell.source.n_rows)
        session.sums.accept_keys(request.keys, session, shell.config.name, shell.ca_certificate)
    except (FedanonError, CryptoError, ValueError) as exc:
        shell.reject(context, exc, grpc.StatusCode.PERMISSION_DENIED, "key shares refused: ")
    session.bytes_received += request.ByteSize()
    return pb.ShareKeysReply()


def secure_sum(
    shell: PartyShell,
    session: RingSession,
    request: pb.SumRequest,
    context: grpc.ServicerContext,
) -> pb.SumReply:
    """One secure-sum iteration (the caller is authorized); retries get the first answer."""
    session.bytes_received += request.ByteSize()
    log.info(
        "secure sum",
        extra={"session": session.session_id[:12], "iteration": request.ref.iteration},
    )
    return session.answers.answer(
        "sum",
        request.ref.iteration,
        request,
        context,
        shell.refuse,
        lambda: session.sums.add(shell, session, request, context),
    )
