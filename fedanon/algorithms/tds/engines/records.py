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

from fedanon.text import factorize, text_codes

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


@dataclass(frozen=True)
class TextColumn:
    """One released column as the union serializes it: a code per record, and the text of
    each code (``astype(str)``; two codes may print alike)."""

    codes: np.ndarray
    texts: np.ndarray  # object array of str


class CodedRelease:
    """A release as distinct rows numbered by first appearance, made text and encoded only for
    the part of the records asked for (:meth:`part`): what is kept between the union's passes
    is a code per record and each distinct row's code per column, never the rows' text."""

    def __init__(self, columns: list[TextColumn], encode: Encode) -> None:
        """One column's text codes at a time: the running row number is combined with them
        and numbered again (a whole table of Python strings would cost far more)."""
        self._encode = encode
        records = len(columns[0].codes) if columns else 0
        row_ids = np.zeros(records, dtype=np.int64)
        cells: list[tuple[np.ndarray, np.ndarray]] = []
        for column in columns:
            # numbered by first appearance (Arrow's hashing: a daemon's release loads no pandas)
            merged, texts = factorize(column.texts)  # codes that print alike: one code
            codes = narrow(merged, len(texts))[column.codes]
            row_ids = factorize(row_ids * len(texts) + codes)[0]
            cells.append((codes, np.asarray(texts, dtype=object)))
        firsts = np.unique(row_ids, return_index=True)[1]
        self._row_ids = narrow(row_ids, len(firsts))
        del row_ids
        self._rows = [(codes[firsts], texts) for codes, texts in cells]  # per distinct row

    def __len__(self) -> int:
        return len(self._row_ids)

    def part(self, start: int, stop: int) -> ReleasedRows:
        """Records `start` to `stop`: the distinct rows they use, each encoded once."""
        used, codes = np.unique(self._row_ids[start:stop], return_inverse=True)
        cells = [texts[first[used]] for first, texts in self._rows]
        rows = [self._encode(row) for row in zip(*cells, strict=True)] if cells else []
        return ReleasedRows(rows, narrow(codes.reshape(-1), len(used)))

    def parts(self, limit: int) -> int:
        """How many parts of at most `limit` records (one for no records)."""
        return max(1, -(-len(self) // limit))


def released_rows(table: pd.DataFrame, encode: Encode) -> ReleasedRows:
    """`table`'s records as distinct rows, each encoded once, and a code per record."""
    columns = [TextColumn(*text_codes(table[name])) for name in table.columns]
    return CodedRelease(columns, encode).part(0, len(table))


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
