"""The party's role in the secure set union of the generalized records.

COLLECT: wrap every local record in all layers (innermost for the leader) and hand the batch to
the leader, which cannot open any layer but the innermost, and concatenates the parties' batches
(all parties seal at once instead of one after the other). STRIP: remove this party's layer
from the whole batch and shuffle it. Nobody but the leader sees a record in clear, and after the
first shuffle nobody can tell which party a record came from.
"""

from __future__ import annotations

import pandas as pd
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.onion_union import UnionContext, peel_layer, seal_records
from fedanon.crypto.parallel import Parallelism
from fedanon.crypto.sealed_total import SealedTotalChannel
from fedanon.protos import fedanon_v1_pb2 as pb


def record_bytes(table: pd.DataFrame) -> list[bytes]:
    """Each generalized row as a serialized ReleasedRecord (typed, no pickle)."""
    rows = table.astype(str).itertuples(index=False, name=None)
    return [pb.ReleasedRecord(values=list(row)).SerializeToString() for row in rows]


def measured_size(records: list[bytes]) -> int:
    """Largest record rounded up to 64 bytes (all the leader learns of the records' sizes)."""
    largest = max((len(r) for r in records), default=1)
    return max(64, -(-largest // 64) * 64)


class UnionRole:
    """Keys and context of one party for one session's union."""

    def __init__(
        self, private_key: X25519PrivateKey, position: int, parallelism: Parallelism
    ) -> None:
        self.private_key = private_key
        self.position = position
        self.parallelism = parallelism
        self.route: tuple[bytes, ...] | None = None

    def context(self, session_id: bytes, round_: int, record_size: int) -> UnionContext:
        if self.route is None:
            raise ValueError("union keys were not shared before the union")
        return UnionContext(session_id, round_, self.route, record_size)

    def seal(self, records: list[bytes], ctx: UnionContext, pad_to: int | None) -> list[bytes]:
        return seal_records(records, ctx, pad_to, self.parallelism)

    def strip(self, items: list[bytes], ctx: UnionContext) -> list[bytes]:
        return peel_layer(items, self.private_key, self.position, ctx)

    def total_channel(self, session_id: bytes) -> SealedTotalChannel:
        """The last party's channel sealing the ring sum's total to the leader (whose union key
        ends the route): the keys are verified, so a middle party cannot stand in for either."""
        if self.route is None:
            raise ValueError("union keys were not shared before the first sum")
        return SealedTotalChannel.for_party(self.private_key, self.route[-1], session_id)
