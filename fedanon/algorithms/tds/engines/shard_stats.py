"""A shard's kept statistics of its partitions, stored sparse.

A party keeps its own statistics of every live partition: the parents of later splits, from
which the largest child is derived (:meth:`LocalParty._parents`). They grow with the number of
partitions, not with the records, and a sharded party keeps them once per shard: at 1M rows in
4 shards, 127,526 live partitions took 136 MB per shard, 96% of it zeros (a shard holds few of
a small partition's records, and most child slots and class/sensitive channels are empty). So
a shard keeps each step's block as its nonzero entries (position within the partition's
statistics, and value, each in the narrowest type), about 3% of the dense bytes there, and
restores the rows a split asks for. Exact integers either way: the vectors do not change.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SparseBlock:
    """One step's (partitions, slots, channels) statistics as its nonzero entries by row."""

    shape: tuple[int, ...]
    starts: np.ndarray  # per partition: where its entries begin (and, one more, the end)
    columns: np.ndarray  # per entry: its position in the partition's flattened statistics
    values: np.ndarray  # per entry: its count

    @classmethod
    def of(cls, stats: np.ndarray) -> SparseBlock:
        flat = stats.reshape(stats.shape[0], int(np.prod(stats.shape[1:])))
        rows, columns = np.nonzero(flat)
        values = flat[rows, columns]
        starts = np.zeros(flat.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=flat.shape[0]), out=starts[1:])
        return cls(
            stats.shape,
            starts,
            columns.astype(np.min_scalar_type(max(flat.shape[1] - 1, 0))),
            values.astype(np.min_scalar_type(int(values.max(initial=0)))),
        )

    @property
    def nbytes(self) -> int:
        return self.starts.nbytes + self.columns.nbytes + self.values.nbytes

    def take(self, local: np.ndarray, out: np.ndarray) -> None:
        """Write the statistics of partitions `local` (row indices) into `out`, row for row."""
        flat = out.reshape(out.shape[0], int(np.prod(out.shape[1:])))
        flat[:] = 0
        begin, end = self.starts[local], self.starts[local + 1]
        lengths = end - begin
        total = int(lengths.sum())
        if total == 0:
            return
        row = np.repeat(np.arange(local.size), lengths)
        # Entry positions: each partition's run begin..end, laid end to end.
        entry = np.arange(total) + np.repeat(begin - (np.cumsum(lengths) - lengths), lengths)
        flat[row, self.columns[entry]] = self.values[entry]
