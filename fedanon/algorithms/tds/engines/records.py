"""A party's release as the secure set union takes it: distinct rows and a code per record.

A generalized release repeats rows, so the rows are numbered by their distinct text
combination, each distinct row is encoded once by the caller's `encode` (the union's typed
record serialization, :mod:`fedanon.party.records`; the core does not know the wire format),
and each record is a small integer. That is how a counting engine hands its release to the
union: the Dask engine makes and encodes each shard's rows on the shard's worker and hands them
over in parts, and the daemon never holds the release as a table. (How much repeats depends
on the data: on the synthetic hospital table at 1M rows nearly every full row is distinct,
since LKC-privacy bounds only L-subsets of the QIDs, so the encoding is per record there.)

Codes are numbered by first appearance within the batch, column values compared as the text the
union serializes (``astype(str)``), so the records, in row order, are those of the whole table,
however the rows are cut into batches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:  # pandas loads with a party's DataFrame, never for the CLI's Arrow path
    import pandas as pd

#: Records per batch the union takes at a time (a shard's release is cut into parts this big):
#: what the daemon holds of the release at once, whatever the shards' sizes.
RELEASE_BATCH_RECORDS = 1 << 20

#: Encodes one released row (its cells as text, in column order) as the union's record bytes.
Encode = Callable[[tuple[str, ...]], bytes]


@dataclass(frozen=True)
class ReleasedRows:
    """Records of a release in row order: `rows[codes[i]]` is record i, encoded."""

    rows: list[bytes]  # the distinct rows encoded, in order of first appearance
    codes: np.ndarray  # per record, its row (the narrowest unsigned type that holds them)

    def __len__(self) -> int:
        return len(self.codes)

    def part(self, start: int, stop: int) -> ReleasedRows:
        """Records `start` to `stop`, with only the rows they use (renumbered)."""
        used, codes = np.unique(self.codes[start:stop], return_inverse=True)
        return ReleasedRows(
            [self.rows[u] for u in used.tolist()], narrow(codes.reshape(-1), len(used))
        )

    def parts(self, limit: int) -> int:
        """How many parts of at most `limit` records (one for no records)."""
        return max(1, -(-len(self) // limit))


def released_rows(table: pd.DataFrame, encode: Encode) -> ReleasedRows:
    """`table`'s records as distinct rows, each encoded once, and a code per record.

    One column's text at a time (a whole table of Python strings would cost far more than the
    table): each column's values are numbered, the running row number is combined with them
    and numbered again, so only the distinct rows' first occurrences are ever made text whole.
    """
    import pandas as pd  # a DataFrame was given: pandas is loaded already

    if len(table) == 0:
        return ReleasedRows([], np.zeros(0, dtype=np.uint8))
    row_ids = np.zeros(len(table), dtype=np.int64)
    for column in table.columns:
        codes, uniques = pd.factorize(text_of(table[column]))
        row_ids = pd.factorize(row_ids * len(uniques) + codes)[0]
    firsts = np.unique(row_ids, return_index=True)[1]
    text = table.iloc[firsts].astype(str).itertuples(index=False, name=None)
    rows = [encode(row) for row in text]
    return ReleasedRows(rows, narrow(row_ids, len(rows)))


def narrow(codes: np.ndarray, rows: int) -> np.ndarray:
    """`codes` in the narrowest unsigned type that holds `rows` - 1."""
    return codes.astype(np.min_scalar_type(max(rows - 1, 0)), copy=False)


def text_of(column: pd.Series) -> pd.Series:
    """The column as the text the union serializes: an Arrow text column without nulls is its
    own text (numbered by Arrow, no Python string per record); any other is ``astype(str)``."""
    import pandas as pd  # a DataFrame's column was given: pandas is loaded already

    dtype = column.dtype
    if (
        isinstance(dtype, pd.ArrowDtype)
        and pa.types.is_string(dtype.pyarrow_dtype)
        and not column.hasnans
    ):
        return column
    return column.astype(str)
