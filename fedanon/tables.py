"""What the LKC path asks of a whole table, for a pandas DataFrame and an Arrow table alike.

`fedanon anonymize lkc` keeps the table it read as Arrow from reading to writing and never
imports pandas (docs/lkc.md, "Whole process"), and so does a party daemon's LKC session
(fedanon/readers/sources.py); the Python API hands in DataFrames. Column-level work is in
:mod:`fedanon.text`; here are the few table-level questions, answered for both containers
without importing pandas.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

#: A table: a pandas DataFrame or an Arrow table (``table[name]`` gives a column of either).
Table = Any


def column_names(table: Table) -> list[Any]:
    """The table's column names, in order."""
    if isinstance(table, pa.Table):
        return list(table.column_names)
    return list(table.columns)


def keep_rows(table: Table, keep: np.ndarray) -> Table:
    """The rows where the boolean mask `keep` is true, in order (a DataFrame keeps its index)."""
    if isinstance(table, pa.Table):
        return table.filter(arrow_of(keep))
    return table[keep]


def select_columns(table: Table, names: Sequence[str]) -> Table:
    """The table's columns `names`, in that order."""
    if isinstance(table, pa.Table):
        return table.select(list(names))
    return table[list(names)]


def drop_columns(table: Table, names: Sequence[str]) -> Table:
    """The table without the named columns."""
    if isinstance(table, pa.Table):
        return table.drop_columns(list(names))
    return table.drop(columns=list(names))


# Arrow <-> numpy without pyarrow's pandas shim: `pa.array`, `pa.scalar` and `to_numpy` consult
# pyarrow's lazy pandas API, which imports pandas (hundreds of milliseconds) on first use;
# buffers and `from_buffers` never do.
_NUMPY_OF_ARROW = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
                   "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
                   "uint64": np.uint64, "float": np.float32, "double": np.float64}  # fmt: skip
_ARROW_OF_NUMPY = {
    np.dtype(dtype): pa.type_for_alias(name) for name, dtype in _NUMPY_OF_ARROW.items()
}


def numbers_of(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A numeric or boolean Arrow column as a numpy array (a null float as NaN; a column with
    a null elsewhere is refused: callers fill nulls first)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n, offset = len(array), array.offset
    if pa.types.is_boolean(array.type):
        bits = np.frombuffer(array.buffers()[1], dtype=np.uint8)
        values = np.unpackbits(bits, bitorder="little")[offset : offset + n].astype(bool)
    else:
        dtype = _NUMPY_OF_ARROW[str(array.type)]
        values = np.frombuffer(array.buffers()[1], dtype=dtype)[offset : offset + n]
    if array.null_count:
        if not pa.types.is_floating(array.type):
            raise ValueError(f"a {array.type} column with nulls has no numpy form here")
        valid = np.unpackbits(np.frombuffer(array.buffers()[0], dtype=np.uint8), bitorder="little")
        values = np.where(valid[offset : offset + n].astype(bool), values, np.nan)
    return values


def arrow_of(values: np.ndarray) -> pa.Array:
    """A numpy array of integers, floats or booleans as an Arrow array (no copy but for
    booleans, which Arrow packs into bits)."""
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), values.size, [None, pa.py_buffer(bits)])
    values = np.ascontiguousarray(values)
    arrow_type = _ARROW_OF_NUMPY[values.dtype]
    return pa.Array.from_buffers(arrow_type, values.size, [None, pa.py_buffer(values)])


def strings_of(texts: Sequence[str]) -> pa.Array:
    """Python strings as an Arrow string array (offsets and bytes built in numpy)."""
    encoded = [t.encode("utf-8") for t in texts]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    large = offsets[-1] >= 2**31
    data = pa.py_buffer(b"".join(encoded))
    offset_buffer = pa.py_buffer(offsets if large else offsets.astype(np.int32))
    arrow_type = pa.large_string() if large else pa.string()
    return pa.Array.from_buffers(arrow_type, len(encoded), [None, offset_buffer, data])
