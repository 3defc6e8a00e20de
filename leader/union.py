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
"""

from __future__ import annotations

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
    def exchange(cls, session: Session, opened: dict[str, pb.OpenSessionReply]) -> UnionKeys:
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
        session.fan_out("key sharing", lambda n, s: s.ShareKeys(
            pb.ShareKeysRequest(ref=session.ref(), keys=shares), timeout=job.rpc_seconds))
        return cls(private, route)

    def sealed_totals(self, session_id: str) -> SealedTotalChannel:
        """The leader's end of the channel on which the last ring party seals the sum's total
        (the route's keys are verified: the last party's is second to last, before ours)."""
        return SealedTotalChannel.for_leader(self.private_key, self.route[-2],
                                             bytes.fromhex(session_id))


def _ring_call(session: Session, request: pb.UnionRequest, phase: str, timeout: float,
               traffic: Traffic) -> Any:
    first = session.ring[0]
    try:
        reply = session.stubs[first].Union(request, timeout=timeout)
    except grpc.RpcError as exc:
        raise describe_rpc_error(exc, first, phase) from exc
    traffic.add("union", request.ByteSize(), reply.ByteSize())
    return reply


def run_union(session: Session, keys: UnionKeys, traffic: Traffic, rpc_seconds: float,
              union_seconds: float, round_: int, parallelism: Parallelism,
              pad_to: int = 0) -> list[list[str]]:
    """Integrate the release: returns the records (as lists of column values), shuffled."""
    parallelism.start()
    ref = session.ref(round_)
    sizes = session.fan_out("union (measure)", lambda n, s: s.Union(
        pb.UnionRequest(ref=ref, phase=pb.UNION_PHASE_MEASURE), timeout=rpc_seconds))
    record_size = max(r.record_size for r in sizes.values())
    timeout = union_seconds
    collect = pb.UnionRequest(ref=ref, phase=pb.UNION_PHASE_COLLECT, record_size=record_size,
                              pad_to=pad_to)
    batches = session.fan_out("union (collect)", lambda n, s: s.Union(collect, timeout=timeout))
    items = [item for name in session.ring for item in batches[name].items]
    traffic.add("union", collect.ByteSize() * len(batches),
                sum(b.ByteSize() for b in batches.values()))
    stripped = _ring_call(session, pb.UnionRequest(
        ref=ref, phase=pb.UNION_PHASE_STRIP, items=items, record_size=record_size,
        pad_to=pad_to), "union (strip)", timeout, traffic)
    ctx = UnionContext(bytes.fromhex(session.session_id), round_, keys.route, record_size)
    try:
        plain = open_records(list(stripped.items), keys.private_key, ctx, parallelism)
    except (FedanonError, CryptoError, ValueError) as exc:
        raise FedanonError(f"union: the final batch is invalid: {exc}") from exc
    rows = []
    for blob in plain:
        record = pb.ReleasedRecord()
        record.ParseFromString(blob)
        rows.append(list(record.values))
    return rows
