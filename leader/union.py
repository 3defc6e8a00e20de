"""The leader's side of the secure set union that integrates the parties' generalized records.

1. Keys: the leader adds its own union key share to the parties' (from the handshake) and sends
   all of them to every party, which verifies them against the federation CA (the leader does
   the same) and orders them into the route: ring order, leader last.
2. MEASURE: each party states its largest record rounded up to 64 bytes; the maximum becomes the
   padded record size, so every ciphertext has the same length.
3. COLLECT from every party at once: its records wrapped in all layers; the leader concatenates
   the batches in ring order (it can read none of them and learns each party's batch size,
   which `pad_to` dummies hide).
4. STRIP around the ring: every party removes its layer from the whole batch and shuffles.
5. The leader removes the innermost layer, drops dummies and decodes the records. That is one
   key exchange per record, so with `parallelism` it runs in worker processes, whose fork
   server starts while the parties seal.

The shuffle mode (`[union] mode = "shuffle"`, crypto/share_shuffle.py) replaces 3-5: SHARE at
every party (parties 2.. return their blocks sealed for party 1), then one SHUFFLE_STEP per party
sent to that step's pair, the leader relaying the share the first of the pair hands on; the last
pair returns both shares, which the leader XORs.

Every phase's items travel in chunks of at most `chunk_bytes` (`fedanon.federation.chunks`):
the leader sends an input chunk by chunk, and fetches an output's chunks after the first
(FETCH); the STRIP ring's output it fetches from the last hop. No message grows with the data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import grpc
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.errors import CryptoError
from fedanon.crypto.identity import Identity, load_identity_files
from fedanon.crypto.keyshare import ONION_UNION, PeerKey
from fedanon.crypto.onion_union import ChunkedOpen, UnionContext, build_route
from fedanon.crypto.packed import Packed, PackingError
from fedanon.crypto.sealed_total import SealedTotalChannel
from fedanon.crypto.share_shuffle import ShuffleContext, open_shuffled
from fedanon.errors import FedanonError
from fedanon.federation.chunks import split, unpacked
from fedanon.federation.keyshares import new_share, verified_peers
from fedanon.leader.federation import PartyFailure, Traffic, describe_rpc_error
from fedanon.leader.kind import PhaseTimer
from fedanon.leader.ring_settings import RingSettings
from fedanon.leader.session import Session
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc


@dataclass
class UnionKeys:
    """The leader's union private key and the verified route."""

    private_key: X25519PrivateKey
    route: tuple[bytes, ...]
    # Every verified union key of the session: a rerun's route is rebuilt from them.
    peers: list[PeerKey] = field(default_factory=list)

    @classmethod
    def exchange(
        cls,
        session: Session,
        opened: dict[str, pb.OpenSessionReply],
        prepare_union: bool = False,
        pad_to: int = 0,
    ) -> UnionKeys:
        """Verify and distribute the union keys; `prepare_union` asks the parties to prepare
        their leader-layer ephemeral keys for a layered union while the loop runs: `pad_to`
        keys each when padded (never a number that depends on a party's hidden count)."""
        job = session.job
        identity: Identity | None = None
        ca: x509.Certificate | None = None
        if job.tls is not None:
            identity = load_identity_files(job.tls.cert, job.tls.key)
            ca = x509.load_pem_x509_certificate(job.tls.ca.read_bytes())
        session_id = bytes.fromhex(session.session_id)
        private, own = new_share(identity, job.name, "leader", session_id, ONION_UNION)
        shares = [own] + [k for name in session.ring for k in opened[name].keys]
        try:
            peers = verified_peers(shares, ONION_UNION, session_id, ca)
            route = build_route(peers, session.ring)
        except (FedanonError, CryptoError, ValueError) as exc:
            raise FedanonError(f"handshake: union key shares refused: {exc}") from exc
        session.fan_out(
            "key sharing",
            lambda n, s: s.ShareKeys(
                pb.ShareKeysRequest(
                    ref=session.ref(),
                    keys=shares,
                    prepare_union=prepare_union,
                    prepare_items=pad_to if prepare_union else 0,
                ),
                timeout=job.rpc_seconds,
            ),
        )
        return cls(private, route, peers)

    def rekeyed(self, ring: list[str]) -> UnionKeys:
        """A rerun's keys: the same, routed through the survivors of `ring` only (no key is
        drawn or shared again: every context of the rerun is bound to its attempt)."""
        kept = [peer for peer in self.peers if peer.role == "leader" or peer.name in ring]
        return UnionKeys(self.private_key, build_route(kept, ring), self.peers)

    def sealed_totals(self, session_id: str) -> SealedTotalChannel:
        """The leader's end of the channel on which the last ring party seals the sum's total
        (the route's keys are verified: the last party's is second to last, before ours)."""
        return SealedTotalChannel.for_leader(
            self.private_key, self.route[-2], bytes.fromhex(session_id)
        )


@dataclass
class UnionProgress:
    """What the parties gave in a layered union's round, kept while it may resume there.

    A party lost mid-union rejoins (leader/rejoin.py) and the union goes on in the same round:
    MEASURE and COLLECT only ask the parties not in `sizes` and `batches` (the others' answers
    stay as they were, so nobody seals twice), and the strip resumes at the hop before the
    lost one (`resume_at`), which forwards the batch it peeled again (party/union.py); the
    hops before it are not asked again. Where that hop kept nothing (or the first hop was
    lost) the strip is sent again as it was. `for_round` starts afresh when the union itself
    starts again as a new round."""

    round: int = -1
    sizes: dict[str, pb.UnionReply] = field(default_factory=dict)
    batches: dict[str, tuple[list[Packed], int, int]] = field(default_factory=dict)
    resume_at: str | None = None

    def for_round(self, round_: int) -> UnionProgress:
        """This progress, emptied first if it was another round's."""
        if round_ != self.round:
            self.round, self.sizes, self.batches, self.resume_at = round_, {}, {}, None
        return self

    def lost(self, failure: PartyFailure, ring: Sequence[str]) -> PartyFailure:
        """Note where the strip resumes after `failure` (the hop before the party it says is
        unreachable, which the leader rejoins; none for the first hop or another failure);
        returns `failure`."""
        name = failure.party
        unreachable = failure.code == grpc.StatusCode.UNAVAILABLE and name in ring
        at = ring.index(name) if unreachable else 0
        self.resume_at = ring[at - 1] if at > 0 else None
        return failure

    @staticmethod
    def missing(done: Collection[str], ring: Sequence[str]) -> list[str]:
        """The parties of `ring` not in `done`."""
        return [name for name in ring if name not in done]


@dataclass(frozen=True)
class _Calls:
    """The union's calls to one party: the input in chunks, then the output's chunks, all under
    one deadline, the phase's (`timeout` seconds from the phase's start: a party that trickles
    its chunks cannot stretch a phase by taking a fresh deadline per chunk or per direction);
    each returns what it moved (bytes sent, bytes received) for the traffic."""

    session: Session
    ref: pb.SessionRef
    chunk_bytes: int
    timeout: float

    def exchange(
        self, name: str, request: pb.UnionRequest, items: Sequence[bytes] = ()
    ) -> tuple[list[Packed], int, int]:
        """Send `request` with `items` to `name` in chunks; the output it keeps, fetched (its
        chunks)."""
        deadline = self.deadline()
        reply, sent, received = self.send(name, request, items, deadline)
        output, more_sent, more_received = self.gather(
            name, reply, request.phase, request.step, deadline
        )
        return output, sent + more_sent, received + more_received

    def deadline(self) -> float:
        """The monotonic time by which a phase starting now must be over."""
        return time.monotonic() + self.timeout

    def send(
        self, name: str, request: pb.UnionRequest, items: Sequence[bytes], deadline: float
    ) -> tuple[pb.UnionReply, int, int]:
        """`request` with `items` in chunks, in order; the last chunk's reply (the phase's)."""
        pieces = split(items, self.chunk_bytes) or [Packed(b"", 0)]
        sent = received = 0
        reply = pb.UnionReply()
        for index, piece in enumerate(pieces):
            message = pb.UnionRequest()
            message.CopyFrom(request)
            message.packed, message.item_size = piece.data, piece.item_size
            message.chunk, message.chunks = index, len(pieces)
            message.chunk_bytes = self.chunk_bytes
            reply = self.session.stubs[name].Union(message, timeout=_left(deadline))
            sent, received = sent + message.ByteSize(), received + reply.ByteSize()
        return reply, sent, received

    def gather(
        self,
        name: str,
        reply: pb.UnionReply,
        phase: int,
        step: int,
        deadline: float,
        on_chunk: Callable[[Packed], None] | None = None,
    ) -> tuple[list[Packed], int, int]:
        """The whole output `reply` announces, chunk by chunk: its items (the first chunk) and
        the chunks after it, fetched from `name` (all of them when the reply carries none, as
        STRIP's) before the phase's `deadline`. `on_chunk` hears each chunk as it arrives."""
        first = _unpacked(name, reply)
        chunks = [first] if len(first) else []
        if on_chunk is not None and chunks:
            on_chunk(first)
        sent = received = 0
        for chunk in range(len(chunks), reply.chunks):
            fetch = pb.UnionRequest(
                ref=self.ref,
                phase=pb.UNION_PHASE_FETCH,
                fetch_phase=phase,  # type: ignore[arg-type]
                step=step,
                chunk=chunk,
                chunk_bytes=self.chunk_bytes,
            )
            fetched = self.session.stubs[name].Union(fetch, timeout=_left(deadline))
            chunks.append(_unpacked(name, fetched))
            if on_chunk is not None:
                on_chunk(chunks[-1])
            sent, received = sent + fetch.ByteSize(), received + fetched.ByteSize()
        return chunks, sent, received


def _unpacked(name: str, reply: pb.UnionReply) -> Packed:
    """A party's reply's items, or an error naming the party whose bytes are no items."""
    try:
        return unpacked(reply)
    except PackingError as exc:
        raise FedanonError(f"union: party {name} sent {exc}") from None


def _flat(chunks: Sequence[Packed]) -> list[bytes]:
    """The items of an output's chunks, one by one (the shuffle mode's share pieces)."""
    return [item for chunk in chunks for item in chunk]


class PhaseDeadline(grpc.RpcError):  # type: ignore[misc]  # grpc ships no types
    """The phase's deadline passed between two of its calls: reported as gRPC reports a call
    that ran out of time, so it names the party the same way."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.DEADLINE_EXCEEDED

    def details(self) -> str:
        return ""


def _left(deadline: float) -> float:
    """The time left before `deadline` for the phase's next call; none left raises
    :class:`PhaseDeadline` (a party that answers each chunk slowly, but within what is left,
    must not carry the phase past its deadline chunk by chunk)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise PhaseDeadline()
    return left


def run_union(
    session: Session,
    keys: UnionKeys,
    traffic: Traffic,
    settings: RingSettings,
    round_: int,
    suppressed: Sequence[int] = (),
    on_phase: Callable[[str], None] | None = None,
    on_counts: Callable[[dict[str, int]], None] | None = None,
    seconds: dict[str, float] | None = None,
    progress: UnionProgress | None = None,
) -> list[list[str]]:
    """Integrate the release: returns the records (as lists of column values), shuffled.

    The job's `settings` give the deadlines (``rpc_seconds`` per call, ``union_seconds`` per
    phase), the mode ("layered": onion encryption, the default; "shuffle": secret-shared
    shuffle among the parties), the padding, the worker processes and the chunk size (the bound
    on the items of one message). `suppressed` names the partitions of T_g whose records every
    party releases as suppressed (record-suppression budget); the leader decided them from the
    secure sums. `on_phase` hears a line per phase (for a progress display); it is told only
    what the leader learns anyway: the number of sealed items, never a party's share of them.
    `on_counts` hears each party's record count only when the job reveals it to the leader (no
    ``union_pad_to``: the batch sizes are the counts); with padding it is never called.
    `seconds` receives the union's critical path as the leader sees it, in seconds per phase
    (layered: measure, collect, strip (the ring's whole pass, hop after hop), open (the fetch
    of the peeled batch and its opening); shuffle: measure, share, each step, open). Each party
    logs its own hop's part of the strip. `progress` keeps what the parties gave in the
    layered mode, for a resumption of the round after a lost party rejoined.
    """
    timer = PhaseTimer()
    kept = (progress or UnionProgress()).for_round(round_)
    try:
        return _run_union(
            session, keys, traffic, settings, round_, suppressed, on_phase, on_counts, timer, kept
        )
    finally:
        if seconds is not None:
            seconds.update(timer.rounded())


def _run_union(
    session: Session,
    keys: UnionKeys,
    traffic: Traffic,
    settings: RingSettings,
    round_: int,
    suppressed: Sequence[int],
    on_phase: Callable[[str], None] | None,
    on_counts: Callable[[dict[str, int]], None] | None,
    timer: PhaseTimer,
    progress: UnionProgress,
) -> list[list[str]]:
    """`run_union`, each phase timed by `timer`, the layered mode's answers kept in
    `progress`."""
    rpc_seconds, union_seconds = settings.rpc_seconds, settings.union_seconds
    pad_to, mode, chunk_bytes = (
        settings.union_pad_to,
        settings.union_mode,
        settings.union_chunk_bytes,
    )
    parallelism = settings.union_parallelism
    show = on_phase or (lambda _text: None)
    ref = session.ref(round_)
    show(f"union: measure: {len(session.ring)} parties measure their records")
    with timer.phase("measure"):
        sizes = _measure(session, ref, pad_to, suppressed, chunk_bytes, rpc_seconds, progress)
    record_size = max(r.record_size for r in sizes.values())
    show(f"union: measure: done; records of {record_size:,} bytes")
    calls = _Calls(session, ref, chunk_bytes, union_seconds)
    if mode == "shuffle":
        block_sizes = [pad_to or sizes[name].count for name in session.ring]
        if pad_to == 0 and on_counts is not None:
            on_counts(dict(zip(session.ring, block_sizes, strict=True)))
        show(f"union: {len(session.ring)} parties shuffle {sum(block_sizes):,} shared records")
        shuffled = _shuffle_union(
            session, keys, traffic, calls, record_size, block_sizes, show, timer
        )
        show(f"union: open: done; {len(shuffled):,} records")
        return _decoded(shuffled)
    parallelism.start()
    collect = pb.UnionRequest(
        ref=ref,
        phase=pb.UNION_PHASE_COLLECT,
        record_size=record_size,
        pad_to=pad_to,
        suppressed=suppressed,
    )
    show(f"union: collect: {len(session.ring)} parties seal their records in layers")

    def collected(name: str, _stub: object) -> tuple[list[Packed], int, int]:
        batch = progress.batches[name] = calls.exchange(name, collect)
        return batch

    with timer.phase("collect"):
        missing = progress.missing(progress.batches, session.ring)
        session.fan_out("union (collect)", collected, union_seconds, missing)
    batches = progress.batches
    ctx = UnionContext(session.binding, round_, keys.route, record_size)
    items = _collected(batches, session.ring, ctx.item_size(0))
    if pad_to == 0 and on_counts is not None:
        on_counts({name: sum(map(len, batches[name][0])) for name in session.ring})
    show(f"union: collect: done; {len(items):,} sealed items")
    new = [batches[name] for name in missing]  # the batches moved by this try
    traffic.add("union", sum(b[1] for b in new), sum(b[2] for b in new))
    last = session.ring[-1]
    strip = pb.UnionRequest(
        ref=ref, phase=pb.UNION_PHASE_STRIP, record_size=record_size, pad_to=pad_to
    )
    try:
        # Opened before the ring runs, so that its worker processes start meanwhile.
        with ChunkedOpen(keys.private_key, ctx, parallelism, len(items)) as opening:
            deadline = calls.deadline()  # the ring's pass and the fetch: one phase
            show(f"union: strip: {len(session.ring)} parties peel {len(items):,} items in turn")
            with timer.phase("strip"):
                stripped, sent, received = _ring_call(calls, strip, items, deadline, progress)
            traffic.add("union", sent, received)
            show("union: strip: done")
            show(f"union: opening {len(items):,} peeled items as they arrive from {last}")
            with timer.phase("open"):
                try:
                    peeled, sent, received = calls.gather(
                        last, stripped, pb.UNION_PHASE_STRIP, 0, deadline, on_chunk=opening.add
                    )
                except grpc.RpcError as exc:
                    failure = describe_rpc_error(exc, last, "union (fetch the peeled batch)")
                    raise progress.lost(failure, session.ring) from exc
                traffic.add("union", sent, received)
                count = sum(map(len, peeled))
                if count != len(items):
                    raise FedanonError(
                        f"{last} returned {count:,} peeled items, not the {len(items):,} sent"
                    )
                plain = opening.records()
            show(f"union: opening: done; {len(plain):,} records")
    except FedanonError:
        raise  # a party's failure or a count check (a ValueError too): already names its cause
    except (CryptoError, ValueError) as exc:
        raise FedanonError(f"union: the final batch is invalid: {exc}") from exc
    return _decoded(plain)


def _collected(
    batches: dict[str, tuple[list[Packed], int, int]], ring: Sequence[str], item_size: int
) -> Packed:
    """The parties' COLLECT outputs in ring order as one batch; a party whose items are not
    of the first hop's size is named (it could not have sealed them for this route)."""
    for name in ring:
        wrong = {chunk.item_size for chunk in batches[name][0] if len(chunk)} - {item_size}
        if wrong:
            raise FedanonError(
                f"union (collect): party {name} sent items of {min(wrong)} bytes, not {item_size}"
            )
    return Packed.concat([chunk for name in ring for chunk in batches[name][0]], item_size)


def _ring_call(
    calls: _Calls,
    request: pb.UnionRequest,
    items: Sequence[bytes],
    deadline: float,
    progress: UnionProgress,
) -> tuple[pb.UnionReply, int, int]:
    """STRIP: the batch to the ring's first party, which forwards it around the ring (each hop
    within what is left of the leader's `deadline`); the reply names the chunks the last party
    holds. After a lost party rejoined, the hop before it forwards its kept batch instead
    (`progress.resume_at`); where it kept none, the whole pass again."""
    ring = calls.session.ring
    hop = progress.resume_at
    if hop is not None:
        again = pb.UnionRequest()
        again.CopyFrom(request)
        again.forward_kept = True
        try:
            return calls.send(hop, again, (), deadline)
        except grpc.RpcError as exc:
            failure = describe_rpc_error(exc, hop, "union (strip, resumed)")
            refused = failure.code == grpc.StatusCode.FAILED_PRECONDITION
            if failure.party != hop or not refused:  # else it kept nothing: the whole pass
                raise progress.lost(failure, ring) from exc
    try:
        return calls.send(ring[0], request, items, deadline)
    except grpc.RpcError as exc:
        raise progress.lost(describe_rpc_error(exc, ring[0], "union (strip)"), ring) from exc


def _decoded(plain: list[bytes]) -> list[list[str]]:
    """The records' column values. A generalized release repeats few distinct records, so each
    distinct serialization is parsed once (the rows share its list; nothing mutates them)."""
    parsed: dict[bytes, list[str]] = {}
    rows = []
    for blob in plain:
        values = parsed.get(blob)
        if values is None:
            values = parsed[blob] = list(pb.ReleasedRecord.FromString(blob).values)
        rows.append(values)
    return rows


def _shuffle_union(
    session: Session,
    keys: UnionKeys,
    traffic: Traffic,
    calls: _Calls,
    record_size: int,
    block_sizes: list[int],
    show: Callable[[str], None],
    timer: PhaseTimer,
) -> list[bytes]:
    """The shuffle mode's phases; returns the real records in the shuffled order. `show`
    hears each phase's start and end, `timer` times each."""
    ring, n = session.ring, len(session.ring)
    ref = calls.ref
    ctx = ShuffleContext(
        session.binding,
        ref.iteration,
        keys.route[:-1],
        record_size,
        tuple(block_sizes),
        calls.chunk_bytes,
    )
    pieces = ctx.chunk_count(ctx.total)  # of every share that travels after SHARE
    share = pb.UnionRequest(
        ref=ref,
        phase=pb.UNION_PHASE_SHUFFLE_SHARE,
        record_size=record_size,
        block_sizes=block_sizes,
    )
    show(f"union: share: {n} parties secret-share their records")
    with timer.phase("share"):
        owned = session.fan_out(
            "union (share)", lambda name, _: calls.exchange(name, share), calls.timeout
        )
    traffic.add("union", sum(o[1] for o in owned.values()), sum(o[2] for o in owned.values()))
    expected = {
        name: ctx.chunk_count(block_sizes[o]) if o >= 2 else 0 for o, name in enumerate(ring)
    }
    shared = {name: _flat(owned[name][0]) for name in ring}
    _expect_items(shared, expected, "share")
    incoming = [item for name in ring[2:] for item in shared[name]]
    show(f"union: share: done; {sum(len(shared[name]) for name in ring):,} chunks")
    for t in range(n):
        first, second = ring[t], ring[(t + 1) % n]
        show(f"union: shuffle step {t + 1}/{n}: {first} and {second} re-share and permute")
        step = pb.UnionRequest(ref=ref, phase=pb.UNION_PHASE_SHUFFLE_STEP, step=t)
        futures = {
            first: session.pool.submit(calls.exchange, first, step),
            second: session.pool.submit(calls.exchange, second, step, incoming),
        }
        with timer.phase(f"step {t + 1}"):
            moved = session.gather(f"union (shuffle step {t})", futures, calls.timeout)
        outputs = {}
        for name, (output, sent, received) in moved.items():
            outputs[name] = _flat(output)
            traffic.add("union", sent, received)
        last = t == n - 1
        _expect_items(outputs, {first: pieces, second: pieces if last else 0}, f"step {t}")
        incoming = outputs[first]
        show(f"union: shuffle step {t + 1}/{n}: done")
    shares = outputs[first] + outputs[second]
    show(f"union: open: {len(shares):,} chunks of the shuffled shares")
    try:
        with timer.phase("open"):
            return open_shuffled(shares, ctx)
    except (FedanonError, ValueError) as exc:
        raise FedanonError(f"union: the shuffled shares are invalid: {exc}") from exc


def _expect_items(outputs: dict[str, list[bytes]], counts: dict[str, int], phase: str) -> None:
    for name, count in counts.items():
        if len(outputs[name]) != count:
            raise FedanonError(
                f"union ({phase}): party {name} sent {len(outputs[name])} items, expected {count}"
            )


def _measure(
    session: Session,
    ref: pb.SessionRef,
    pad_to: int,
    suppressed: Sequence[int],
    chunk_bytes: int,
    rpc_seconds: float,
    progress: UnionProgress,
) -> dict[str, pb.UnionReply]:
    """MEASURE at every party at once (those that have not answered it in this round): each
    one's padded record size (and count, unpadded)."""
    request = pb.UnionRequest(
        ref=ref,
        phase=pb.UNION_PHASE_MEASURE,
        pad_to=pad_to,
        suppressed=suppressed,
        chunk_bytes=chunk_bytes,
    )

    def measured(name: str, stub: pb_grpc.PartyStub) -> pb.UnionReply:
        reply: pb.UnionReply = stub.Union(request, timeout=rpc_seconds)
        progress.sizes[name] = reply
        return reply

    missing = progress.missing(progress.sizes, session.ring)
    session.fan_out("union (measure)", measured, rpc_seconds, missing)
    return progress.sizes
