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

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from fedanon.errors import FedanonError

if TYPE_CHECKING:
    from fedanon.algorithms.tds.engines.base import CountingEngine


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


def _local_engine(settings: EngineSettings) -> CountingEngine:
    """Imported on demand too: party.toml reads this registry without loading the algorithms."""
    engine: CountingEngine = import_module("fedanon.algorithms.tds.engines.base").LocalEngine(
        settings
    )
    return engine


def _dask_engine(settings: EngineSettings) -> CountingEngine:
    """Imported on demand: Dask is an optional dependency (the ``dask`` extra)."""
    try:
        module = import_module("fedanon.algorithms.tds.engines.sharded")
    except ImportError as exc:
        raise FedanonError(
            f"engine 'dask' needs Dask: pip install 'fedanon[dask]' ({exc})"
        ) from None
    engine: CountingEngine = module.DaskEngine(settings)
    return engine


#: Engine name -> factory; the modules load only when an engine is made.
ENGINES: dict[str, Callable[[EngineSettings], CountingEngine]] = {
    "local": _local_engine,
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
