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
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from fedanon.errors import FedanonError
from fedanon.readers.table_io import PARQUET_SUFFIXES, read_arrow, read_table


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
        parts = [read_table(path)[columns] for path in self.files]
        return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)

    def column(self, name: str) -> pd.Series:
        """The column from every file, as Arrow text (one chunk per file: no copy)."""
        parts = [read_arrow(path, columns=[name]).column(0) for path in self.files]
        chunks = pa.chunked_array([c for part in parts for c in part.chunks], type=pa.string())
        return pd.Series(pd.arrays.ArrowExtensionArray(chunks), name=name)

    @property
    def index(self) -> pd.Index:
        return pd.RangeIndex(sum(pq.read_metadata(path).num_rows for path in self.files))


class TableSource(Protocol):
    """A party's table: its columns and size, its rows whole or as shards."""

    @property
    def columns(self) -> list[str]: ...

    @property
    def n_rows(self) -> int: ...

    def frame(self) -> pd.DataFrame:
        """The whole table in this process (the one-process engine, the other job kinds)."""
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

    def shards(self, count: int) -> list[Shard]:
        """Consecutive groups of files, one group per shard (`count` at most, one file at
        least each): a partition is never split, so a worker reads only its own files."""
        files = self.files
        groups = np.array_split(np.arange(len(files)), min(max(1, count), len(files)))
        return [FilesShard(tuple(files[i] for i in group.tolist())) for group in groups]


def open_source(path: Path, delimiter: str | None = None) -> TableSource:
    """A Parquet dataset (a directory, or a .parquet file) stays on disk; any other table is
    read whole, as the one-process party reads it."""
    if path.is_dir() or path.suffix.lower() in PARQUET_SUFFIXES:
        return ParquetSource(path)
    return FrameSource(read_table(path, delimiter))
