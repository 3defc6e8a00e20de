"""The ring protocol's steps at a party, for every ring session (LKC and randomization).

Opening: the ring must continue at this party's configured next hop; the party draws its union
key and the keys its secure-sum protocol needs and hands their shares to the leader.
``ShareKeys``: the federation's verified shares become the union route (and, for the pairwise
sum, the pairwise masks). ``Sum``: the session's protocol (party/sums.py) answers; a retried hop
gets the first answer (party/replay.py). ``Union``: one message of the secure set union, whose
party role (keys, sealing, stripping, the shuffle) is party/union.py's ``UnionRole``.
"""

from __future__ import annotations

import logging
import time
from typing import cast

import grpc

from fedanon.crypto.errors import CryptoError
from fedanon.crypto.keyshare import ONION_UNION
from fedanon.crypto.packed import Packed
from fedanon.errors import FedanonError
from fedanon.federation.chunks import split, unpacked
from fedanon.federation.keyshares import new_share, verified_peers
from fedanon.party.errors import NotExpected
from fedanon.party.records import LocalRecords
from fedanon.party.session_base import RingSession
from fedanon.party.shell import PartyShell
from fedanon.party.union import UnionRole, chunk_bytes_of, measured_size
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
        peers = verified_peers(request.keys, ONION_UNION, sid, shell.ca_certificate)
        session.union.accept_route(peers, session.ring)
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


def serve_union(
    servicer: PartyShell,
    session: RingSession,
    request: pb.UnionRequest,
    context: grpc.ServicerContext,
) -> pb.UnionReply:
    """One union message at this party (MEASURE, COLLECT, STRIP and forward, the shuffle mode's
    SHARE and STEP, or FETCH), its caller authorized and the call not a replay."""
    role = session.union
    output: Packed | list[bytes]
    try:
        packed = unpacked(request)  # the gate refused one that cuts into no items (party/gate.py)
        session.check_ref(request.ref, session.union_round)
        if request.phase == pb.UNION_PHASE_FETCH:
            fetched = role.fetch(request.fetch_phase, request.step, request.chunk)
            reply = pb.UnionReply(packed=fetched.data, item_size=fetched.item_size)
            session.bytes_sent += reply.ByteSize()
            return reply
        chunk_bytes = chunk_bytes_of(request, servicer.max_message_bytes)
        if request.phase == pb.UNION_PHASE_STRIP and session.rerunning:
            raise NotExpected("a rerun without excluded parties has no ring to strip around")
        if request.phase == pb.UNION_PHASE_STRIP and request.forward_kept:
            if session.successor is None or len(packed):
                raise NotExpected("a resumed strip carries no items, to a hop with a next hop")
            output = role.kept(request.ref.iteration)  # the leader resumes the strip here
        elif request.phase == pb.UNION_PHASE_STRIP:
            stripped = _strip(session, request, packed)
            if stripped is None:
                return pb.UnionReply()  # more of the input to come
            output = stripped
        else:
            items = role.inbox.receive(
                request.phase,
                request.step,
                request.chunk,
                max(request.chunks, 1),
                packed.items(),
            )
            if items is None:
                return pb.UnionReply()  # more of the input to come
            if request.phase == pb.UNION_PHASE_MEASURE:
                return _measure(session, request)
            output = _output(session, request, items, chunk_bytes)
    except (FedanonError, CryptoError, ValueError) as exc:
        servicer.reject(context, exc, grpc.StatusCode.FAILED_PRECONDITION, "union: ")
    chunks = split(output, chunk_bytes)
    forwards = session.successor is not None and servicer.next_stub is not None
    if request.phase == pb.UNION_PHASE_STRIP and forwards:
        began = time.perf_counter()
        forwarded = _forward_strip(servicer, session, request, chunks, chunk_bytes, context)
        log.info(
            "union strip at hop %d: forwarded in %.3f s (the rest of the ring's pass included)",
            session.position,
            time.perf_counter() - began,
        )
        return forwarded
    role.keep_output(request.phase, request.step, chunks)
    relayed = request.phase == pb.UNION_PHASE_STRIP  # the leader fetches it from this hop
    first = Packed(b"", 0) if relayed or not chunks else chunks[0]
    reply = pb.UnionReply(packed=first.data, item_size=first.item_size, chunks=len(chunks))
    session.bytes_sent += reply.ByteSize()
    return reply


def _records(session: RingSession, request: pb.UnionRequest) -> LocalRecords:
    """This party's records, counted once per round by MEASURE, which names the suppressed
    partitions (a later phase's list is not consulted again); read batch by batch from the
    session's release (a sharded party's shards) whenever a phase takes them."""
    return session.union.local_records(
        request.ref.iteration,
        lambda: LocalRecords(session.released_batches(list(request.suppressed))),
    )


def _measure(session: RingSession, request: pb.UnionRequest) -> pb.UnionReply:
    """The padded record size, and the record count where nothing hides it."""
    records = _records(session, request)
    # The count only where nothing hides it anyway (no padding): the shuffle mode's public
    # block sizes.
    count = len(records) if request.pad_to == 0 else 0
    return pb.UnionReply(record_size=measured_size(records.longest), count=count)


def _output(
    session: RingSession, request: pb.UnionRequest, items: list[bytes], chunk_bytes: int
) -> list[bytes]:
    """The items a phase produces at this party from its (reassembled) input."""
    role = session.union
    if request.phase == pb.UNION_PHASE_SHUFFLE_STEP:
        return role.shuffle_step(request.step, items)
    records = _records(session, request)
    session_id = session.binding
    if request.phase == pb.UNION_PHASE_SHUFFLE_SHARE:
        return role.share(
            records,
            session_id,
            request.ref.iteration,
            request.record_size,
            tuple(request.block_sizes),
            chunk_bytes,
        )
    if request.phase != pb.UNION_PHASE_COLLECT:
        raise ValueError("unknown union phase")
    role.check_collect(request.ref.iteration)
    ctx = role.context(session_id, request.ref.iteration, request.record_size)
    began = time.perf_counter()
    sealed = role.seal(records, ctx, request.pad_to or None)
    role.collected(request.ref.iteration)
    log.info(
        "union collect at hop %d: sealed %d items in %.3f s",
        session.position,
        len(sealed),
        time.perf_counter() - began,
    )
    return sealed


def _strip(session: RingSession, request: pb.UnionRequest, items: Packed) -> Packed | None:
    """One chunk of STRIP's input, its layer removed as it arrives; the whole batch, shuffled,
    after the last chunk. The party's log gets the hop's critical path: how long the input took
    to arrive and how long the hop worked after its last chunk (the rest of the peeling and
    the shuffle), the part of the ring's pass that is this hop's own."""
    role = session.union
    ctx = role.context(session.binding, request.ref.iteration, request.record_size)
    chunks = max(request.chunks, 1)
    now = time.perf_counter()
    if request.chunk == 0:
        role.strip_began = now
    try:
        stripped = role.strip_chunk(request.chunk, chunks, items, ctx)
    except CryptoError as exc:  # name who handed over the batch: the culprit, not this hop
        sender = session.predecessor or "the leader"
        raise type(exc)(f"the batch {sender} sent: {exc}") from None
    if stripped is not None:
        log.info(
            "union strip at hop %d: %d items in %d chunks arrived in %.3f s, peeled and "
            "shuffled %.3f s after the last",
            session.position,
            len(stripped),
            chunks,
            now - role.strip_began,
            time.perf_counter() - now,
        )
    return stripped


def _forward_strip(
    servicer: PartyShell,
    session: RingSession,
    request: pb.UnionRequest,
    chunks: list[Packed],
    chunk_bytes: int,
    context: grpc.ServicerContext,
) -> pb.UnionReply:
    """Hand the stripped, shuffled batch to the next hop in chunks; relay only the number of
    chunks the last hop holds (the last chunk's reply, once the rest of the ring is done)."""
    reply = pb.UnionReply()
    for index, chunk in enumerate(chunks or [Packed(b"", 0)]):
        forward = pb.UnionRequest(
            ref=request.ref,
            phase=request.phase,
            packed=chunk.data,
            item_size=chunk.item_size,
            record_size=request.record_size,
            pad_to=request.pad_to,
            chunk=index,
            chunks=max(len(chunks), 1),
            chunk_bytes=chunk_bytes,
        )
        session.bytes_sent += forward.ByteSize()
        what = f"union strip (chunk {index + 1} of {max(len(chunks), 1)})"
        reply = cast(pb.UnionReply, servicer._forward("Union", forward, context, what))
        session.bytes_received += reply.ByteSize()
    relayed = pb.UnionReply(chunks=reply.chunks)
    session.bytes_sent += relayed.ByteSize()
    return relayed
