"""Column helpers that keep Arrow-backed text fast, for pandas columns and Arrow columns alike.

Converting an Arrow string column to Python objects (``astype(str)``) costs more than the whole
anonymization of it, so these helpers only convert columns that are not text already.

`fedanon anonymize lkc` runs on an Arrow table from reading to writing and never imports
pandas (its import alone costs more than reading and writing the table): every helper here
takes an Arrow text column (``pa.ChunkedArray`` / ``pa.Array``, what ``table[name]`` of an
Arrow table gives) as well as a pandas Series, and imports pandas only on the Series branch,
where the caller has imported it already (and crosses between Arrow and numpy through
:mod:`fedanon.tables`, which keeps pyarrow from importing it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fedanon.tables import arrow_of, numbers_of, strings_of

if TYPE_CHECKING:
    import pandas as pd

#: What a column may be: a pandas Series or an Arrow column.
Column = Any


def is_arrow(column: Column) -> bool:
    """True for an Arrow column (a table's ``ChunkedArray`` or a plain ``Array``)."""
    return isinstance(column, pa.ChunkedArray | pa.Array)


def _arrow_text(column: Column) -> pa.ChunkedArray | pa.Array:
    """An Arrow column as Arrow text (a dictionary column decodes to its labels)."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return column
    return pc.cast(column, pa.string())


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values)`` of a numpy array without pandas: int64 codes numbered in order
    of first occurrence, and the distinct values (one hashing pass, in Arrow)."""
    text = values.dtype == object
    encoded = pc.dictionary_encode(strings_of(values.tolist()) if text else arrow_of(values))
    codes = numbers_of(encoded.indices).astype(np.int64, copy=False)
    if text:
        return codes, np.asarray(encoded.dictionary.to_pylist(), dtype=object)
    return codes, numbers_of(encoded.dictionary)


def _filled(array: pa.Array | pa.ChunkedArray, value: np.ndarray) -> pa.Array | pa.ChunkedArray:
    """`array` with nulls replaced by the one element of `value` (an Arrow scalar built without
    pyarrow's pandas shim)."""
    return pc.fill_null(array, arrow_of(value)[0]) if array.null_count else array


def text_at(column: Column, row: int) -> str:
    """The text of one cell (for error messages naming a bad value; a null prints as pandas
    prints a missing cell)."""
    if is_arrow(column):
        value = _arrow_text(column)[row].as_py()
        return "<NA>" if value is None else str(value)
    return str(as_text(column).iloc[row])


def factorize_column(column: Column) -> tuple[np.ndarray, Column]:
    """``pd.factorize(column)``: int64 codes (-1 for a missing cell) and the distinct values
    as a column of the same kind (an Arrow array for an Arrow column)."""
    if is_arrow(column):
        encoded = pc.dictionary_encode(column)
        if isinstance(encoded, pa.ChunkedArray):
            encoded = encoded.combine_chunks()
        codes = numbers_of(_filled(encoded.indices, np.full(1, -1, dtype=np.int32)))
        return codes.astype(np.int64, copy=False), encoded.dictionary
    import pandas as pd

    codes, uniques = pd.factorize(column)
    return codes.astype(np.int64, copy=False), pd.Series(uniques)


def equals_text(column: Column, value: str) -> np.ndarray:
    """Whether each cell's text is `value` (bool array)."""
    if is_arrow(column):
        hit = pc.equal(_arrow_text(column), strings_of([value])[0])
        return numbers_of(_filled(hit, np.zeros(1, dtype=bool)))
    return (as_text(column) == value).to_numpy(dtype=bool)


def distinct_text(column: Column) -> list[str]:
    """The column's distinct texts, in order of first occurrence."""
    return text_codes(column)[1].tolist()


def as_text(column: pd.Series) -> pd.Series:
    """The column as strings: unchanged when it already holds text."""
    import pandas as pd

    if isinstance(column.dtype, pd.ArrowDtype) and pa.types.is_string(column.dtype.pyarrow_dtype):
        return column
    if isinstance(column.dtype, pd.StringDtype):
        return column
    return column.astype(str)


def text_codes(column: Column) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(column.astype(str))`` (int64 codes, the distinct strings as an object
    array, in order of first occurrence), converting each distinct value once instead of each
    cell: a Categorical or Arrow column costs its codes, a text column one hashing pass.

    Columns whose distinct values could compare equal while printing differently (mixed Python
    objects such as 1 and 1.0, floats such as 0.0 and -0.0) take the cell-by-cell path. An
    Arrow column (text, or a dictionary of text: a release's QIDs) is encoded by Arrow itself.
    """
    if is_arrow(column):
        return _arrow_text_codes(column)
    import pandas as pd

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


def _arrow_text_codes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """`text_codes` of an Arrow column: a null prints as pandas prints a missing text cell. A
    dictionary column (a release's QID) costs its codes: its labels are encoded once and every
    row takes its label's code, never its text."""
    if pa.types.is_dictionary(column.type) and column.null_count == 0:
        array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        label_codes, labels = _arrow_text_codes(array.dictionary)
        codes, label_of = factorize(label_codes[numbers_of(array.indices)])
        return codes, labels[label_of]
    text = _arrow_text(column)
    if text.null_count:
        text = pc.fill_null(text, strings_of(["<NA>"])[0])
    encoded = pc.dictionary_encode(text)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    codes = numbers_of(encoded.indices).astype(np.int64, copy=False)
    return codes, np.asarray(encoded.dictionary.to_pylist(), dtype=object)


def distinct_text_count(column: Column) -> int:
    """``column.astype(str).nunique()``: an Arrow text column without nulls is counted by
    Arrow itself (its distinct strings are its text), anything else through `text_codes`."""
    if is_arrow(column) and pa.types.is_string(column.type) and column.null_count == 0:
        return int(pc.count_distinct(column).as_py())
    if is_arrow(column):
        return len(text_codes(column)[1])
    import pandas as pd

    dtype = column.dtype
    if isinstance(dtype, pd.ArrowDtype) and pa.types.is_string(dtype.pyarrow_dtype):
        values = column.array.__arrow_array__()
        if values.null_count == 0:
            return int(pc.count_distinct(values).as_py())
    return len(text_codes(column)[1])


def _factorized(text: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    import pandas as pd

    codes, uniques = pd.factorize(text, use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=object)


def as_numbers(column: Column) -> tuple[np.ndarray, int | None]:
    """(float values, index of the first value that is not a number or None).

    Text is cast by Arrow; where that fails (some cell is no number Arrow reads) pandas'
    lenient parse decides which cells are numbers, for Arrow columns too.
    """
    if is_arrow(column):
        text = _arrow_text(column)
        try:
            values = numbers_of(pc.cast(text, pa.float64()))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            import pandas as pd  # only for a column Arrow cannot read as numbers

            values = pd.to_numeric(
                np.asarray(text.to_pylist(), dtype=object), errors="coerce"
            ).astype(float)
        bad = np.flatnonzero(np.isnan(values))
        return values, (int(bad[0]) if bad.size else None)
    import pandas as pd

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


def lookup_codes(column: Column, lookup: dict[str, int]) -> tuple[np.ndarray, int | None]:
    """Map every text value through `lookup` (-1 when absent); also the first absent row.

    Factorizes first, so the dictionary is consulted once per distinct value, not per row; an
    Arrow text column without nulls (what the readers give) is looked up by Arrow itself, one
    hashing pass and no distinct values back in Python.
    """
    if is_arrow(column):
        values = _arrow_text(column)
    else:
        import pandas as pd

        dtype = column.dtype
        arrow_text = isinstance(dtype, pd.ArrowDtype) and pa.types.is_string(dtype.pyarrow_dtype)
        values = column.array.__arrow_array__() if arrow_text else None
    if values is not None and values.null_count == 0 and len(values):
        value_set = pc.cast(strings_of(list(lookup)), values.type)
        found = _filled(pc.index_in(values, value_set=value_set), np.full(1, -1, np.int32))
        where = numbers_of(found).astype(np.int64, copy=False)
        targets = np.append(np.fromiter(lookup.values(), np.int64, len(lookup)), -1)
        return _first_absent(targets[where])
    if values is not None:  # Arrow text with nulls: pandas' factorize, null coded -1
        codes, distinct = factorize_column(values)
        uniques = distinct.to_pylist()
    else:
        import pandas as pd

        codes, uniques = pd.factorize(as_text(column), sort=False)
    mapped = np.array([lookup.get(u, -1) for u in uniques] + [-1], dtype=np.int64)
    # a missing cell (code -1) takes the appended -1: absent, never the last distinct value's
    return _first_absent(mapped[codes] if len(codes) else np.empty(0, dtype=np.int64))


def _first_absent(out: np.ndarray) -> tuple[np.ndarray, int | None]:
    """`out` and the first row whose value was absent (-1), or None."""
    bad = np.flatnonzero(out < 0)
    return out, (int(bad[0]) if bad.size else None)


def plain_text(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with every categorical column as plain Python strings (object dtype)."""
    import pandas as pd

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
