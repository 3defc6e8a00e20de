"""Counting engines: where a party's counting state for top-down specialization lives.

A party answers every specialization with the count statistics of the partitions it created
(:mod:`fedanon.algorithms.tds.layout`). Counts add up exactly over any split of the rows, as
they do over parties, so the state may live in this process (``local``: one
:class:`~fedanon.algorithms.tds.local_party.LocalParty`) or be sharded by rows over the workers
of a Dask cluster (``dask``: one ``LocalParty`` per shard, vectors summed on the workers). Either
way the daemon hands one vector to the secure sum, and the release is the same, byte for byte.

``ENGINES`` maps an engine name (party.toml ``[table] engine``, ``fedanon sim lkc --engine``)
to its factory; the Dask engine is imported only when asked for, so the core installs and runs
without Dask (the ``dask`` extra). docs/engines.md says why Dask, and why bincount per shard.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from fedanon.algorithms.tds.layout import (
    DynamicSplit,
    PartitionTable,
    Specialization,
    StatsLayout,
)
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.errors import FedanonError
from fedanon.readers.sources import TableSource
from fedanon.schema import Schema


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
    ) -> pd.DataFrame: ...

    def close(self) -> None:
        """Release what the state holds outside this process (nothing for ``local``)."""
        ...


@dataclass(frozen=True)
class EngineSettings:
    """party.toml's ``[table]`` section (the defaults: one process, no cluster).

    `scheduler` is a Dask scheduler's address (``tls://host:8786``); without one the Dask engine
    starts a local cluster of `workers` processes (0: threads of this process). `tls` is (CA,
    certificate, key) for a ``tls://`` scheduler: the party's own certificate files.
    """

    name: str = "local"
    shards: int = 1
    scheduler: str | None = None
    workers: int = 0
    tls: tuple[Path, Path, Path] | None = None


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
        return LocalParty(schema, source.frame()[columns])

    def close(self) -> None:
        """Nothing started, nothing to stop."""


def _dask_engine(settings: EngineSettings) -> CountingEngine:
    """Imported on demand: Dask is an optional dependency (the ``dask`` extra)."""
    try:
        from fedanon.algorithms.tds.engines.sharded import DaskEngine
    except ImportError as exc:
        raise FedanonError(
            f"engine 'dask' needs Dask: pip install 'fedanon[dask]' ({exc})"
        ) from None
    return DaskEngine(settings)


ENGINES: dict[str, Callable[[EngineSettings], CountingEngine]] = {
    "local": LocalEngine,
    "dask": _dask_engine,
}


def counting_engine(settings: EngineSettings) -> CountingEngine:
    """The engine `settings` names (one line naming the choices for an unknown one)."""
    factory = ENGINES.get(settings.name)
    if factory is None:
        raise FedanonError(
            f"unknown counting engine '{settings.name}' (choose from {', '.join(ENGINES)})"
        )
    return factory(settings)
