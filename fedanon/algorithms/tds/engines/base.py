"""What a counting engine is (its protocols) and the one-process engine, ``local``.

The registry of engines is :mod:`fedanon.algorithms.tds.engines`, kept free of this module's
imports so that party.toml is validated without loading the algorithms.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa

from fedanon.algorithms.tds.engines import EngineSettings
from fedanon.algorithms.tds.engines.records import Encode, ReleasedRows
from fedanon.algorithms.tds.layout import (
    DynamicSplit,
    PartitionTable,
    Specialization,
    StatsLayout,
)
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.readers.sources import TableSource
from fedanon.schema import Schema
from fedanon.tables import Table, select_columns


class PartyCounts(Protocol):
    """A party's counting state for one run: the engine's count source plus the release."""

    schema: Schema
    layout: StatsLayout
    partitions: PartitionTable

    def atom_histogram(self, attr: int, node: int) -> np.ndarray: ...

    def start(self, splits: Sequence[DynamicSplit] = ()) -> np.ndarray: ...

    def specialize(self, step: Specialization) -> np.ndarray: ...

    def generalized_table(
        self, suppressed: np.ndarray | None = None, drop_suppressed: bool = False
    ) -> Table: ...

    def released_rows(
        self, encode: Encode, suppressed: np.ndarray | None = None, drop_suppressed: bool = False
    ) -> Iterator[ReleasedRows]:
        """The generalized records batch by batch, in row order, for the union, each distinct
        row encoded by `encode`: no batch larger than one shard nor ``RELEASE_BATCH_RECORDS``
        records, so whoever consumes them holds one batch at a time."""
        ...

    def close(self) -> None:
        """Release what the state holds outside this process (nothing for ``local``)."""
        ...


class CountingEngine(Protocol):
    """Builds a party's counting state for each run; holds the cluster between runs."""

    def open(self, schema: Schema, source: TableSource, columns: list[str]) -> PartyCounts:
        """The counting state over `source`'s `columns` (the released ones, in order)."""
        ...

    def close(self) -> None:
        """Stop what the engine started (a local cluster); the engine is not used again."""
        ...


@dataclass(frozen=True, eq=False)
class Encoding:
    """Exactly what ``LocalParty``'s encoding of a table (every QID's atoms, the class, the
    sensitive flags and profiles) depends on. `objects`, compared by identity: the source's
    whole Arrow table (immutable, so its identity is its content) and the schema's taxonomy
    trees (none dynamic: a dynamic tree grows in a run); `values`, compared by equality: the
    released columns, whether each tree matches leaves by number, the sensitive values, the
    class column and values."""

    objects: tuple[object, ...]
    values: tuple[object, ...]

    @classmethod
    def of(cls, whole: Table, columns: list[str], schema: Schema) -> Encoding | None:
        """The encoding's key; None where none can be reused (a DataFrame may change in place)."""
        trees = schema.taxonomies
        if not isinstance(whole, pa.Table) or any(t.is_dynamic for t in trees):
            return None
        return cls(
            (whole, *trees),
            (
                tuple(columns),
                tuple(t.numeric_leaves for t in trees),
                tuple((s.column, s.value) for s in schema.sensitive),
                schema.class_column,
                tuple(schema.class_values),
            ),
        )

    def same(self, other: Encoding) -> bool:
        return (
            len(self.objects) == len(other.objects)
            and all(a is b for a, b in zip(self.objects, other.objects, strict=True))
            and self.values == other.values
        )


class LocalEngine:
    """The one-process party: the whole table in this process, one ``LocalParty``.

    A daemon opens its table once per session, and a session's largest fixed cost was
    encoding it (every QID's atoms, the class, the sensitive flags), paid again by each
    survivor of an exclusion's rerun and by every later job. The engine keeps the last
    encoding (one entry: memory bounded by one encoded table) and a run under the same
    table, columns and schema starts from it (``LocalParty.restarted``); any other asks for
    a new one, which replaces it."""

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings
        # the last encoding and a party restarted from it before any run (no run's state)
        self._last: tuple[Encoding, LocalParty] | None = None
        self._lock = threading.Lock()  # sessions of different jobs open concurrently

    def open(self, schema: Schema, source: TableSource, columns: list[str]) -> PartyCounts:
        whole = source.whole()
        key = Encoding.of(whole, columns, schema)
        if key is None:
            return LocalParty(schema, select_columns(whole, columns))
        with self._lock:
            last = self._last
        if last is not None and last[0].same(key):
            return last[1].restarted(schema)
        party = LocalParty(schema, select_columns(whole, columns))
        with self._lock:
            self._last = (key, party.restarted(schema))
        return party

    def close(self) -> None:
        """Nothing started, nothing to stop."""
