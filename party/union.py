"""The party's role in the secure set union of the generalized records.

COLLECT: wrap every local record in all layers (innermost for the leader) and hand the batch to
the leader, which cannot open any layer but the innermost, and concatenates the parties' batches
(all parties seal at once instead of one after the other). STRIP: remove this party's layer
from the whole batch and shuffle it. Nobody but the leader sees a record in clear, and after the
first shuffle nobody can tell which party a record came from.

Shuffle mode (crypto/share_shuffle.py): SHUFFLE_SHARE secret-shares the local records (sealed
for party 1 unless this party is 0 or 1); SHUFFLE_STEP permutes and re-masks this party's share
at each of its two steps.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.onion_union import UnionContext, peel_layer, seal_records
from fedanon.crypto.parallel import Parallelism
from fedanon.crypto.prepared_keys import PreparedLeaderKeys
from fedanon.crypto.sealed_total import SealedTotalChannel
from fedanon.crypto.share_shuffle import PairKeys, ShuffleContext, ShuffleParty
from fedanon.protos import fedanon_v1_pb2 as pb


def record_bytes(table: pd.DataFrame) -> list[bytes]:
    """Each generalized row as a serialized ReleasedRecord (typed, no pickle)."""
    serialized: dict[tuple[str, ...], bytes] = {}  # generalized rows repeat: serialize once
    out = []
    for row in table.astype(str).itertuples(index=False, name=None):
        blob = serialized.get(row)
        if blob is None:
            blob = serialized[row] = pb.ReleasedRecord(values=list(row)).SerializeToString()
        out.append(blob)
    return out


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
        self.shuffle: ShuffleParty | None = None
        self._records: tuple[int, list[bytes]] | None = None
        self._prepared: PreparedLeaderKeys | None = None

    def prepare(self, count: int) -> None:
        """Start preparing `count` leader-layer keys (the route must be known)."""
        if self.route is None:
            raise ValueError("union keys were not shared before preparing the union")
        self.stop_preparing()
        self._prepared = PreparedLeaderKeys(self.route[-1], count)

    def stop_preparing(self) -> list[tuple[bytes, bytes]]:
        """End the background preparation; the keys it made (used once, by `seal`)."""
        prepared, self._prepared = self._prepared, None
        return prepared.take() if prepared is not None else []

    def local_records(self, round_: int, serialize: Callable[[], list[bytes]]) -> list[bytes]:
        """This party's serialized records for `round_`, computed once for all union phases."""
        if self._records is None or self._records[0] != round_:
            self._records = (round_, serialize())
        return self._records[1]

    def context(self, session_id: bytes, round_: int, record_size: int) -> UnionContext:
        if self.route is None:
            raise ValueError("union keys were not shared before the union")
        return UnionContext(session_id, round_, self.route, record_size)

    def seal(self, records: list[bytes], ctx: UnionContext, pad_to: int | None) -> list[bytes]:
        return seal_records(records, ctx, pad_to, self.parallelism, self.stop_preparing())

    def strip(self, items: list[bytes], ctx: UnionContext) -> list[bytes]:
        return peel_layer(items, self.private_key, self.position, ctx)

    def share(
        self,
        records: list[bytes],
        session_id: bytes,
        round_: int,
        record_size: int,
        block_sizes: tuple[int, ...],
    ) -> list[bytes]:
        """Shuffle mode: start this party's part of the run and share its records."""
        if self.route is None:
            raise ValueError("union keys were not shared before the union")
        if self.shuffle is not None:
            raise ValueError("this session's records were already shared")
        parties = self.route[:-1]
        ctx = ShuffleContext(session_id, round_, parties, record_size, block_sizes)
        self.shuffle = ShuffleParty(PairKeys(self.private_key, parties, session_id), ctx)
        return self.shuffle.owner_message(records)

    def shuffle_step(self, step: int, items: list[bytes]) -> list[bytes]:
        """Shuffle mode: one of this party's two steps."""
        if self.shuffle is None:
            raise ValueError("shuffle step before the records were shared")
        return self.shuffle.step(step, items)

    def total_channel(self, session_id: bytes) -> SealedTotalChannel:
        """The last party's channel sealing the ring sum's total to the leader (whose union key
        ends the route): the keys are verified, so a middle party cannot stand in for either."""
        if self.route is None:
            raise ValueError("union keys were not shared before the first sum")
        return SealedTotalChannel.for_party(self.private_key, self.route[-1], session_id)
