"""What a counting engine is (its protocols) and the one-process engine, ``local``.

The registry of engines is :mod:`fedanon.algorithms.tds.engines`, kept free of this module's
imports so that party.toml is validated without loading the algorithms.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

import numpy as np

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


class LocalEngine:
    """The one-process party: the whole table in this process, one ``LocalParty``."""

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings

    def open(self, schema: Schema, source: TableSource, columns: list[str]) -> PartyCounts:
        return LocalParty(schema, select_columns(source.whole(), columns))

    def close(self) -> None:
        """Nothing started, nothing to stop."""
