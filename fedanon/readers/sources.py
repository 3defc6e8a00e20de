"""Table *sources*: where a party's rows come from, without loading them all in one place.

A one-process party reads its whole table into memory. A sharded party (the Dask counting
engine, docs/engines.md) hands each worker a :class:`Shard`, a small picklable recipe that loads
one slice of the rows where it runs: a slice of a pandas frame the daemon already holds, or a
group of a Parquet dataset's files, read by the worker itself. The daemon itself only needs the
source's column names and row count, which a Parquet dataset gives from its footers.

Shards keep the source's row order (shard 0's rows first), so the concatenation of the shards'
generalized rows is the one-process party's release, row for row. A worker reads its shard one
column at a time (:meth:`Shard.column`) and keeps each as integer codes, so the whole shard is
never held as text (docs/engines.md, "Memory").

The party daemon reads its table as Arrow text (:class:`ArrowSource`) and imports pandas only
when a job asks for a DataFrame: an LKC party counts and releases the Arrow table as it is
(docs/distributed.md, "Start-up").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np
import pyarrow as pa

from fedanon.errors import FedanonError
from fedanon.readers.table_io import (
    PARQUET_SUFFIXES,
    frame_of,
    read_arrow,
    read_table,
)
from fedanon.tables import Table

if TYPE_CHECKING:  # pandas loads when a job asks for a DataFrame, never at a daemon's start-up
    import pandas as pd
    import pyarrow.parquet as pq


class Shard(Protocol):
    """One slice of a table's rows, loadable where it is needed (on a worker)."""

    def load(self, columns: list[str]) -> pd.DataFrame:
        """The slice's rows, restricted to `columns` (in that order)."""
        ...

    def column(self, name: str) -> pd.Series:
        """One column of the slice (read alone: the others are not loaded for it)."""
        ...

    @property
    def index(self) -> pd.Index:
        """The slice's row labels (those its release keeps)."""
        ...


@dataclass(frozen=True)
class FrameShard:
    """Rows of a frame the caller holds (shipped to the worker with the shard)."""

    frame: pd.DataFrame

    def load(self, columns: list[str]) -> pd.DataFrame:
        return self.frame[columns]

    def column(self, name: str) -> pd.Series:
        return self.frame[name]

    @property
    def index(self) -> pd.Index:
        return self.frame.index


@dataclass(frozen=True)
class FilesShard:
    """Consecutive files of a Parquet dataset, read by the worker (as the daemon reads a table)."""

    files: tuple[Path, ...]

    def load(self, columns: list[str]) -> pd.DataFrame:
        import pandas as pd

        parts = [read_table(path)[columns] for path in self.files]
        return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)

    def column(self, name: str) -> pd.Series:
        """The column from every file, as Arrow text (one chunk per file: no copy)."""
        import pandas as pd

        parts = [read_arrow(path, columns=[name]).column(0) for path in self.files]
        chunks = pa.chunked_array([c for part in parts for c in part.chunks], type=pa.string())
        return pd.Series(pd.arrays.ArrowExtensionArray(chunks), name=name)

    @property
    def index(self) -> pd.Index:
        import pandas as pd
        import pyarrow.parquet as pq

        return pd.RangeIndex(sum(pq.read_metadata(path).num_rows for path in self.files))


class TableSource(Protocol):
    """A party's table: its columns and size, its rows whole or as shards."""

    @property
    def columns(self) -> list[str]: ...

    @property
    def n_rows(self) -> int: ...

    def frame(self) -> pd.DataFrame:
        """The whole table in this process as a DataFrame (the job kinds other than LKC)."""
        ...

    def whole(self) -> Table:
        """The whole table in this process as the source holds it, an Arrow table or a
        DataFrame (the one-process LKC engine counts either)."""
        ...

    def shards(self, count: int) -> list[Shard]:
        """The rows as at most `count` shards, in row order (a dataset: one per file at most)."""
        ...


@dataclass(frozen=True)
class FrameSource:
    """A pandas frame already in memory."""

    table: pd.DataFrame

    @property
    def columns(self) -> list[str]:
        return [str(c) for c in self.table.columns]

    @property
    def n_rows(self) -> int:
        return len(self.table)

    def frame(self) -> pd.DataFrame:
        return self.table

    def whole(self) -> Table:
        return self.table

    def shards(self, count: int) -> list[Shard]:
        """`count` contiguous slices of (nearly) equal size; empty slices are dropped."""
        bounds = np.linspace(0, len(self.table), max(1, count) + 1).astype(np.int64)
        return [
            FrameShard(self.table.iloc[lo:hi])
            for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
            if hi > lo
        ] or [FrameShard(self.table)]


@dataclass(frozen=True)
class ParquetSource:
    """A Parquet file or a directory of Parquet files (its partitions, read in name order)."""

    path: Path

    @property
    def files(self) -> list[Path]:
        if not self.path.is_dir():
            return [self.path]
        found = sorted(p for p in self.path.rglob("*") if p.suffix.lower() in PARQUET_SUFFIXES)
        if not found:
            raise FedanonError(f"{self.path}: no Parquet files (*.parquet, *.pq) in the directory")
        return found

    def _metadata(self, path: Path) -> pq.FileMetaData:
        import pyarrow.parquet as pq

        try:
            return pq.read_metadata(path)
        except (OSError, ValueError) as exc:
            raise FedanonError(f"{path}: not a readable Parquet file ({exc})") from None

    @property
    def columns(self) -> list[str]:
        first = self.files[0]
        names = [str(n) for n in self._metadata(first).schema.to_arrow_schema().names]
        for other in self.files[1:]:
            theirs = [str(n) for n in self._metadata(other).schema.to_arrow_schema().names]
            if theirs != names:
                raise FedanonError(f"{other}: columns {theirs} differ from {first}'s {names}")
        return names

    @property
    def n_rows(self) -> int:
        return sum(self._metadata(p).num_rows for p in self.files)

    def frame(self) -> pd.DataFrame:
        return FilesShard(tuple(self.files)).load(self.columns)

    def whole(self) -> Table:
        return self.frame()

    def shards(self, count: int) -> list[Shard]:
        """Consecutive groups of files, one group per shard (`count` at most, one file at
        least each): a partition is never split, so a worker reads only its own files."""
        files = self.files
        groups = np.array_split(np.arange(len(files)), min(max(1, count), len(files)))
        return [FilesShard(tuple(files[i] for i in group.tolist())) for group in groups]


@dataclass(frozen=True)
class ArrowSource:
    """A table read whole as Arrow text (:func:`read_arrow`): what a one-process party daemon
    holds. The LKC engine counts it as it is; the other job kinds get :func:`read_table`'s
    DataFrame of it, made (and kept) when the first of them asks."""

    table: pa.Table
    _frame: list[pd.DataFrame] = field(default_factory=list, compare=False, repr=False)

    @property
    def columns(self) -> list[str]:
        return [str(c) for c in self.table.column_names]

    @property
    def n_rows(self) -> int:
        return int(self.table.num_rows)

    def frame(self) -> pd.DataFrame:
        if not self._frame:
            self._frame.append(frame_of(self.table))
        return self._frame[0]

    def whole(self) -> Table:
        return self.table

    def shards(self, count: int) -> list[Shard]:
        return FrameSource(self.frame()).shards(count)


def as_source(table: pd.DataFrame | TableSource) -> TableSource:
    """`table` as a source: a source as it is, a DataFrame (the Python API's, tests') in a
    :class:`FrameSource` (without importing pandas to ask)."""
    if isinstance(table, FrameSource | ArrowSource | ParquetSource):
        return table
    return FrameSource(cast("pd.DataFrame", table))


def open_source(path: Path, delimiter: str | None = None) -> TableSource:
    """A Parquet dataset (a directory, or a .parquet file) stays on disk; any other table is
    read whole as Arrow text, as the one-process party reads it (:func:`read_source`)."""
    if path.is_dir() or path.suffix.lower() in PARQUET_SUFFIXES:
        return ParquetSource(path)
    return read_source(path, delimiter)


def read_source(path: Path, delimiter: str | None = None) -> ArrowSource:
    """The one-process party's table: read whole, as Arrow text (no pandas), from one read of
    the file (what its sealed sessions' digest hashes: fedanon/readers/inputs.py)."""
    return ArrowSource(read_arrow(path, delimiter))
