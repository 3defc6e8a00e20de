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


def text_codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(column.astype(str))`` (int64 codes, the distinct strings as an object
    array, in order of first occurrence), converting each distinct value once instead of each
    cell: a Categorical or Arrow column costs its codes, a text column one hashing pass.

    Columns whose distinct values could compare equal while printing differently (mixed Python
    objects such as 1 and 1.0, floats such as 0.0 and -0.0) take the cell-by-cell path.
    """
    dtype = column.dtype
    if pd.api.types.is_float_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype):
        return _factorized(column.astype(str))
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    codes = codes.astype(np.int64, copy=False)
    if pd.api.types.is_object_dtype(dtype):
        if all(type(u) is str for u in uniques):  # Python strings: already their own text
            return codes, np.asarray(uniques, dtype=object)
        return _factorized(column.astype(str))
    text = pd.Series(uniques, dtype=dtype).astype(str).to_numpy(dtype=object)
    merged, distinct = pd.factorize(text, use_na_sentinel=False)
    if len(distinct) == len(text):  # every distinct value prints differently: codes stand
        return codes, np.asarray(distinct, dtype=object)
    return merged.astype(np.int64)[codes], np.asarray(distinct, dtype=object)


def distinct_text_count(column: pd.Series) -> int:
    """``column.astype(str).nunique()``: an Arrow text column without nulls is counted by
    Arrow itself (its distinct strings are its text), anything else through `text_codes`."""
    dtype = column.dtype
    if isinstance(dtype, pd.ArrowDtype) and pa.types.is_string(dtype.pyarrow_dtype):
        values = column.array.__arrow_array__()
        if values.null_count == 0:
            return int(pc.count_distinct(values).as_py())
    return len(text_codes(column)[1])


def _factorized(text: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(text, use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=object)


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

    Factorizes first, so the dictionary is consulted once per distinct value, not per row; an
    Arrow text column without nulls (what the readers give) is looked up by Arrow itself, one
    hashing pass and no distinct values back in Python.
    """
    dtype = column.dtype
    if isinstance(dtype, pd.ArrowDtype) and pa.types.is_string(dtype.pyarrow_dtype):
        values = column.array.__arrow_array__()
        if values.null_count == 0 and len(values):
            value_set = pa.array(list(lookup), type=values.type)
            found = pc.index_in(values, value_set=value_set).fill_null(-1)
            where = found.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            targets = np.append(np.fromiter(lookup.values(), np.int64, len(lookup)), -1)
            return _first_absent(targets[where])
    codes, uniques = pd.factorize(as_text(column), sort=False)
    mapped = np.array([lookup.get(u, -1) for u in uniques], dtype=np.int64)
    return _first_absent(mapped[codes] if len(codes) else np.empty(0, dtype=np.int64))


def _first_absent(out: np.ndarray) -> tuple[np.ndarray, int | None]:
    """`out` and the first row whose value was absent (-1), or None."""
    bad = np.flatnonzero(out < 0)
    return out, (int(bad[0]) if bad.size else None)


def plain_text(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with every categorical column as plain Python strings (object dtype)."""
    out = table.copy()
    for column in out.columns:
        values = out[column]
        if not isinstance(values.dtype, pd.CategoricalDtype):
            continue
        codes = values.cat.codes.to_numpy()
        if codes.size and codes.min() < 0:  # a missing cell: pandas' own text for it
            out[column] = values.astype(str).astype(object)
            continue
        # Each category becomes text once, then every cell takes its category's string.
        labels = np.array([str(c) for c in values.cat.categories], dtype=object)
        out[column] = pd.Series(labels[codes], index=out.index, name=column)
    return out
