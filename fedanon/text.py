"""Column helpers that keep Arrow-backed text fast.

Converting an Arrow string column to Python objects (``astype(str)``) costs more than the whole
anonymization of it, so these helpers only convert columns that are not text already.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


def as_text(column: pd.Series) -> pd.Series:
    """The column as strings: unchanged when it already holds text."""
    if isinstance(column.dtype, pd.ArrowDtype) and pa.types.is_string(column.dtype.pyarrow_dtype):
        return column
    if isinstance(column.dtype, pd.StringDtype):
        return column
    return column.astype(str)


def as_numbers(column: pd.Series) -> tuple[np.ndarray, int | None]:
    """(float values, index of the first value that is not a number or None)."""
    if pd.api.types.is_numeric_dtype(column.dtype) and not isinstance(column.dtype, pd.ArrowDtype):
        values = column.to_numpy(dtype=float)
    else:
        text = as_text(column)
        try:
            values = pc.cast(pa.array(text, type=pa.string()), pa.float64()).to_numpy(
                zero_copy_only=False
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            values = pd.to_numeric(text.astype(object), errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(np.isnan(values))
    return values, (int(bad[0]) if bad.size else None)


def lookup_codes(column: pd.Series, lookup: dict[str, int]) -> tuple[np.ndarray, int | None]:
    """Map every text value through `lookup` (-1 when absent); also the first absent row.

    Factorizes first, so the dictionary is consulted once per distinct value, not per row.
    """
    codes, uniques = pd.factorize(as_text(column), sort=False)
    mapped = np.array([lookup.get(u, -1) for u in uniques], dtype=np.int64)
    out = mapped[codes] if len(codes) else np.empty(0, dtype=np.int64)
    bad = np.flatnonzero(out < 0)
    return out, (int(bad[0]) if bad.size else None)
