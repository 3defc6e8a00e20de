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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.errors import CryptoError
from fedanon.crypto.identity import Identity, load_identity_files
from fedanon.crypto.keyshare import ONION_UNION
from fedanon.crypto.onion_union import UnionContext, open_records
from fedanon.crypto.parallel import Parallelism
from fedanon.crypto.sealed_total import SealedTotalChannel
from fedanon.crypto.share_shuffle import ShuffleContext, open_shuffled
from fedanon.errors import FedanonError
from fedanon.federation.keyshares import new_share, union_route
from fedanon.leader.federation import Traffic, describe_rpc_error
from fedanon.protos import fedanon_v1_pb2 as pb

if TYPE_CHECKING:
    from fedanon.leader.run import Session


@dataclass
class UnionKeys:
    """The leader's union private key and the verified route."""

    private_key: X25519PrivateKey
    route: tuple[bytes, ...]

    @classmethod
    def exchange(
        cls, session: Session, opened: dict[str, pb.OpenSessionReply], prepare_union: bool = False
    ) -> UnionKeys:
        """Verify and distribute the union keys; `prepare_union` asks the parties to prepare
        their leader-layer ephemeral keys for a layered union while the loop runs."""
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
            route = union_route(shares, session.ring, session_id, ca)
        except (FedanonError, CryptoError, ValueError) as exc:
            raise FedanonError(f"handshake: union key shares refused: {exc}") from exc
        session.fan_out(
            "key sharing",
            lambda n, s: s.ShareKeys(
                pb.ShareKeysRequest(ref=session.ref(), keys=shares, prepare_union=prepare_union),
                timeout=job.rpc_seconds,
            ),
        )
        return cls(private, route)

    def sealed_totals(self, session_id: str) -> SealedTotalChannel:
        """The leader's end of the channel on which the last ring party seals the sum's total
        (the route's keys are verified: the last party's is second to last, before ours)."""
        return SealedTotalChannel.for_leader(
            self.private_key, self.route[-2], bytes.fromhex(session_id)
        )


def _ring_call(
    session: Session, request: pb.UnionRequest, phase: str, timeout: float, traffic: Traffic
) -> Any:
    first = session.ring[0]
    try:
        reply = session.stubs[first].Union(request, timeout=timeout)
    except grpc.RpcError as exc:
        raise describe_rpc_error(exc, first, phase) from exc
    traffic.add("union", request.ByteSize(), reply.ByteSize())
    return reply


def run_union(
    session: Session,
    keys: UnionKeys,
    traffic: Traffic,
    rpc_seconds: float,
    union_seconds: float,
    round_: int,
    parallelism: Parallelism,
    pad_to: int = 0,
    mode: str = "layered",
    suppressed: Sequence[int] = (),
    on_phase: Callable[[str], None] | None = None,
    on_counts: Callable[[dict[str, int]], None] | None = None,
) -> list[list[str]]:
    """Integrate the release: returns the records (as lists of column values), shuffled.

    `mode` is "layered" (onion encryption, the default) or "shuffle" (secret-shared shuffle
    among the parties). `suppressed` names the partitions of T_g whose records every party
    releases as suppressed (record-suppression budget); the leader decided them from the secure
    sums. `on_phase` hears a line per phase (for a progress display); it is told only what the
    leader learns anyway: the number of sealed items, never a party's share of them.
    `on_counts` hears each party's record count only when the job reveals it to the leader (no
    `pad_to`: the batch sizes are the counts); with padding it is never called.
    """
    show = on_phase or (lambda _text: None)
    ref = session.ref(round_)
    show(f"union: {len(session.ring)} parties measure and seal their records")
    sizes = session.fan_out(
        "union (measure)",
        lambda n, s: s.Union(
            pb.UnionRequest(
                ref=ref, phase=pb.UNION_PHASE_MEASURE, pad_to=pad_to, suppressed=suppressed
            ),
            timeout=rpc_seconds,
        ),
    )
    record_size = max(r.record_size for r in sizes.values())
    if mode == "shuffle":
        block_sizes = [pad_to or sizes[name].count for name in session.ring]
        if pad_to == 0 and on_counts is not None:
            on_counts(dict(zip(session.ring, block_sizes, strict=True)))
        show(f"union: {len(session.ring)} parties shuffle {sum(block_sizes):,} shared records")
        return _decoded(
            _shuffle_union(session, keys, traffic, union_seconds, ref, record_size, block_sizes)
        )
    parallelism.start()
    timeout = union_seconds
    collect = pb.UnionRequest(
        ref=ref,
        phase=pb.UNION_PHASE_COLLECT,
        record_size=record_size,
        pad_to=pad_to,
        suppressed=suppressed,
    )
    batches = session.fan_out("union (collect)", lambda n, s: s.Union(collect, timeout=timeout))
    items = [item for name in session.ring for item in batches[name].items]
    if pad_to == 0 and on_counts is not None:
        on_counts({name: len(batches[name].items) for name in session.ring})
    show(
        f"union: {len(items):,} sealed items collected; {len(session.ring)} parties peel their "
        "layers around the ring"
    )
    traffic.add(
        "union", collect.ByteSize() * len(batches), sum(b.ByteSize() for b in batches.values())
    )
    stripped = _ring_call(
        session,
        pb.UnionRequest(
            ref=ref, phase=pb.UNION_PHASE_STRIP, items=items, record_size=record_size, pad_to=pad_to
        ),
        "union (strip)",
        timeout,
        traffic,
    )
    show(f"union: opening {len(stripped.items):,} peeled items")
    ctx = UnionContext(bytes.fromhex(session.session_id), round_, keys.route, record_size)
    try:
        plain = open_records(list(stripped.items), keys.private_key, ctx, parallelism)
    except (FedanonError, CryptoError, ValueError) as exc:
        raise FedanonError(f"union: the final batch is invalid: {exc}") from exc
    return _decoded(plain)


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
    timeout: float,
    ref: pb.SessionRef,
    record_size: int,
    block_sizes: list[int],
) -> list[bytes]:
    """The shuffle mode's phases; returns the real records in the shuffled order."""
    ring, n = session.ring, len(session.ring)
    share = pb.UnionRequest(
        ref=ref,
        phase=pb.UNION_PHASE_SHUFFLE_SHARE,
        record_size=record_size,
        block_sizes=block_sizes,
    )
    owned = session.fan_out("union (share)", lambda _, s: s.Union(share, timeout=timeout))
    traffic.add("union", share.ByteSize() * n, sum(r.ByteSize() for r in owned.values()))
    _expect_items(owned, {name: int(o >= 2) for o, name in enumerate(ring)}, "share")
    incoming = [item for name in ring[2:] for item in owned[name].items]
    for t in range(n):
        first, second = ring[t], ring[(t + 1) % n]
        requests = {
            first: pb.UnionRequest(ref=ref, phase=pb.UNION_PHASE_SHUFFLE_STEP, step=t),
            second: pb.UnionRequest(
                ref=ref, phase=pb.UNION_PHASE_SHUFFLE_STEP, step=t, items=incoming
            ),
        }
        futures = {
            name: session.pool.submit(session.stubs[name].Union, request, timeout=timeout)
            for name, request in requests.items()
        }
        replies = {}
        for name, future in futures.items():
            try:
                replies[name] = future.result()
            except grpc.RpcError as exc:
                raise describe_rpc_error(exc, name, f"union (shuffle step {t})") from exc
            traffic.add("union", requests[name].ByteSize(), replies[name].ByteSize())
        last = t == n - 1
        _expect_items(replies, {first: 1, second: int(last)}, f"shuffle step {t}")
        incoming = list(replies[first].items)
    shares = [replies[first].items[0], replies[second].items[0]]
    ctx = ShuffleContext(
        bytes.fromhex(session.session_id),
        ref.iteration,
        keys.route[:-1],
        record_size,
        tuple(block_sizes),
    )
    try:
        return open_shuffled(shares, ctx)
    except (FedanonError, ValueError) as exc:
        raise FedanonError(f"union: the shuffled shares are invalid: {exc}") from exc


def _expect_items(replies: dict[str, Any], counts: dict[str, int], phase: str) -> None:
    for name, count in counts.items():
        if len(replies[name].items) != count:
            raise FedanonError(
                f"union ({phase}): party {name} sent {len(replies[name].items)} "
                f"items, expected {count}"
            )
