"""A party's records for the secure set union, read from its counting engine batch by batch.

The engine hands its release as batches of distinct rows, each serialized once by
:func:`encode_record` (a typed ``ReleasedRecord``, no pickle), and a code per record
(:mod:`fedanon.algorithms.tds.engines.records`; a Dask party: parts of each shard's release,
made and serialized on the shard's worker). The daemon expands the codes into records only a
piece at a time, while it seals them (party/union.py ``UnionRole.seal``): it never holds the
release as a table, nor more than one batch of it. The records, in order, are each row of the
release serialized.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from fedanon.algorithms.tds.engines.records import ReleasedRows, released_rows
from fedanon.protos import fedanon_v1_pb2 as pb

if TYPE_CHECKING:  # pandas loads with a job that asks for a DataFrame, not with the daemon
    import pandas as pd

#: Batches of the release, in row order; called once per pass over the records.
Batches = Callable[[], Iterable[ReleasedRows]]


class LocalRecords:
    """This party's serialized records: counted and measured in one pass over the batches,
    expanded again on each later pass (the engine keeps its batches; the daemon does not)."""

    def __init__(self, batches: Batches) -> None:
        self._batches = batches
        self.count = 0
        longest = b""
        for blobs, codes in self._serialized():
            self.count += len(codes)
            longest = max([longest, *blobs], key=len)
            del blobs, codes  # dropped before the next batch is read
        self.longest = [longest] if self.count else []  # the longest record, if any

    def __len__(self) -> int:
        return self.count

    def _serialized(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Per batch: its distinct rows serialized, and the records' codes into them."""
        for batch in self._batches():
            blobs = np.empty(len(batch.rows), dtype=object)
            blobs[:] = batch.rows
            codes = batch.codes
            del batch  # the batch itself is not held while the engine makes the next one
            yield blobs, codes
            del codes, blobs

    def pieces(self, limit: int) -> Iterator[list[bytes]]:
        """The records in order, `limit` at most at a time (one batch's codes expanded)."""
        for blobs, codes in self._serialized():
            for start in range(0, len(codes), limit):
                yield list(blobs[codes[start : start + limit]])
            del blobs, codes  # dropped before the next batch is read

    def expand(self) -> list[bytes]:
        """Every record at once (the shuffle mode's sharing takes them whole)."""
        return [record for piece in self.pieces(max(1, self.count)) for record in piece]


def encode_record(row: tuple[str, ...]) -> bytes:
    """One released row's cells as the union's record: a serialized ``ReleasedRecord``."""
    return pb.ReleasedRecord(values=list(row)).SerializeToString()


def table_batches(table: pd.DataFrame) -> Batches:
    """A release table held whole (the job kinds without a counting engine) as one batch."""
    held = [released_rows(table, encode_record)]
    return lambda: held
