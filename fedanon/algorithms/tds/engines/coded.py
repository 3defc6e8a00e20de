"""A shard's released columns kept as integer codes, never as a table of text.

A Dask shard (:meth:`LocalParty.from_shard`) releases its QIDs as the labels of its partitions
(the atom codes it counts with stand for them) and copies every other released column as it
came in. Held as text, those columns cost far more than the counting does (Arrow text: an
offset and the characters per cell; pandas objects: a Python string each), so a shard keeps
each of them as the narrowest unsigned codes over its distinct values and rebuilds the column
only when its release is made. The release is the same: the values are the column's own (its
dtype too), and their text is what the union serializes, ``astype(str)``, taken per distinct
value: two values that compare equal but print differently (1 and 1.0 in an object column)
keep separate codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fedanon.algorithms.tds.engines.records import narrow, text_of
from fedanon.text import text_codes

if TYPE_CHECKING:  # pandas loads with a shard's columns, never for the CLI's Arrow path
    import pandas as pd


@dataclass(frozen=True)
class CodedColumn:
    """One column: `values.take(codes)` is the column, `texts[codes]` its text."""

    codes: np.ndarray  # per row: its distinct value (the narrowest unsigned type)
    values: Any  # the distinct values, as the column's own array (a missing one included)
    texts: np.ndarray  # each distinct value's text, ``astype(str)`` (objects: a few strings)

    @classmethod
    def of(cls, column: pd.Series) -> CodedColumn:
        import pandas as pd  # a column was given: pandas is loaded already

        if text_of(column) is column:  # Arrow text without nulls: a value is its text
            codes, values = pd.factorize(column)
            texts = np.asarray(values, dtype=object)
            return cls(narrow(codes, len(values)), values.array, texts)
        # Distinct by value and by text; each kept as its first cell holds it.
        value_codes = pd.factorize(column, use_na_sentinel=False)[0]
        cell_texts, texts = text_codes(column)
        pairs, _ = pd.factorize(value_codes.astype(np.int64) * len(texts) + cell_texts)
        firsts = np.unique(pairs, return_index=True)[1]  # codes number first appearances
        return cls(narrow(pairs, len(firsts)), column.array.take(firsts), texts[cell_texts[firsts]])

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes + self.values.nbytes)


@dataclass(frozen=True)
class CodedTable:
    """A shard's released columns other than its QIDs, by name, and its row labels."""

    columns: dict[str, CodedColumn]
    index: pd.Index

    def __len__(self) -> int:
        return len(self.index)

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for c in self.columns.values()) + int(self.index.memory_usage())

    def frame(self, keep: np.ndarray | None = None) -> pd.DataFrame:
        """The columns rebuilt for the rows `keep` (a boolean mask; None: every row)."""
        import pandas as pd  # a shard was read into pandas columns: loaded already

        index = self.index if keep is None else self.index[keep]
        columns = {}
        for name, column in self.columns.items():
            codes = column.codes if keep is None else column.codes[keep]
            columns[name] = pd.Series(column.values.take(codes), index=index, name=name)
        return pd.DataFrame(columns, index=index)
