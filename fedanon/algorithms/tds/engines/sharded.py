"""The Dask counting engine: one ``LocalParty`` per row shard, on the workers of a Dask cluster.

Counts add up exactly over row shards, as they do over parties. So a sharded party keeps the
one-process party's counting state unchanged, one per shard, each on a Dask worker (pinned
there: the state is mutable and must never be copied), sends every specialization to every
shard, sums the shards' vectors on the workers (a tree of fan-in 8) and hands one vector to the
daemon, which feeds the secure sum as before. The daemon holds only the partition table T_g, the
shards' recipes (:mod:`fedanon.readers.sources`) and the log of the steps applied so far.

A lost worker loses its shards' state, not the job: the daemon notices the worker gone (it polls
the scheduler while it waits), reloads each of its shards on a live worker from the source and
replays the step log there, then asks again. Exact integer counts, so the vector is the same.

The traffic between the daemon and its workers is Dask's own (pickle over Dask's comms, TLS when
the scheduler address is ``tls://``, and always for a local cluster of processes): the workers
belong to the hospital, inside its trust boundary; nothing of it reaches the federation's wire.
"""

from __future__ import annotations

import contextlib
import copy
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
import pandas as pd
from distributed import Client, Future, LocalCluster, wait
from distributed.security import Security

from fedanon.algorithms.tds.engines import EngineSettings
from fedanon.algorithms.tds.engines.base import Encoding
from fedanon.algorithms.tds.engines.records import RELEASE_BATCH_RECORDS, Encode, ReleasedRows
from fedanon.algorithms.tds.layout import (
    DynamicSplit,
    PartitionTable,
    Specialization,
    StatsLayout,
)
from fedanon.algorithms.tds.local_party import LocalParty, apply_splits
from fedanon.errors import FedanonError, one_line
from fedanon.readers.sources import ArrowSource, Shard, TableSource
from fedanon.schema import Schema

#: Fan-in of the tree that sums the shards' vectors on the workers.
SUM_FAN_IN = 8
#: How often a waiting daemon asks the scheduler whether its shards' workers are still there.
POLL_SECONDS = 0.5
#: How long the daemon tries to reach a scheduler before the session is refused.
CONNECT_SECONDS = 30
#: How long closing a run waits for its shards' state to be dropped.
CLOSE_SECONDS = 10.0
#: Recoveries of one call before giving up (a cluster that loses workers faster than it replays).
MAX_RECOVERIES = 16
#: Tasks of an ordered read (the release's parts) submitted ahead of the one the daemon takes:
#: a computed part waits in its worker's memory until taken, so submitting them all at once
#: held the whole release there (100M records: 14 GB in the workers, bench/RESULTS.md "#29
#: session 10"); this many keep the workers busy while the daemon seals one part.
TASKS_AHEAD = 4

# ----------------------------------------------------------------- worker side


@dataclass
class _ShardState:
    party: LocalParty
    done: int = 0  # steps of the log applied


#: This worker process's shards, by key (threads of a local in-process cluster share it).
_SHARDS: dict[str, _ShardState] = {}

#: Shards' encodings kept between the runs of a job (``DaskEngine``), by key: each a party
#: restarted before any step (no run's state), which a later run restarts from.
_ENCODED: dict[str, LocalParty] = {}

#: The LocalParty methods that change its state: they are the step log.
_MUTATING = frozenset({"start", "specialize", "count_own_only"})


class ShardLost(Exception):
    """A worker has no state, or a stale one, for the shard a call names: replay it."""


def _open_shard(
    key: str, shard: Shard, schema: Schema, columns: list[str], kept: str | None = None
) -> int:
    """Load the shard's rows and build its counting state (its own copy of the schema: the
    dynamic trees grow in place, and the shards of one in-process worker must not share them);
    keep its encoding under `kept` when given (a later run of the job restarts from it)."""
    party = LocalParty.from_shard(copy.deepcopy(schema), shard, columns)
    if kept is not None:
        _ENCODED[kept] = party.restarted(party.schema)
    _SHARDS[key] = _ShardState(party)
    return len(party.table)


def _restart_shard(key: str, kept: str, schema: Schema) -> int:
    """The shard's counting state restarted from its kept encoding (its own copy of the
    schema, as :func:`_open_shard` makes); ShardLost where this worker has none (it restarted):
    the shard is then loaded again."""
    base = _ENCODED.get(kept)
    if base is None:
        raise ShardLost(key)
    _SHARDS[key] = _ShardState(base.restarted(copy.deepcopy(schema)))
    return len(base.table)


def _replay(key: str, log: list[tuple[str, tuple[Any, ...]]]) -> int:
    """Apply the steps the shard has not applied yet (all of them after a reload)."""
    state = _SHARDS.get(key)
    if state is None:  # its worker restarted between the reload and the replay
        raise ShardLost(key)
    for name, args in log[state.done :]:
        getattr(state.party, name)(*args)
        state.done += 1
    return state.done


def _current(key: str, done: int) -> _ShardState:
    """The shard's state, which must have applied exactly `done` steps."""
    state = _SHARDS.get(key)
    if state is None or state.done != done:
        raise ShardLost(key)
    return state


def _step(key: str, done: int, name: str, args: tuple[Any, ...]) -> Any:
    """Call `name` on the shard's state, which must have applied exactly `done` steps."""
    state = _current(key, done)
    out = getattr(state.party, name)(*args)
    if name in _MUTATING:
        state.done += 1
        return None if out is None else _pack(out)
    return out


@dataclass(frozen=True)
class _Packed:
    """A statistics vector as its nonzero entries.

    Most of a step's statistics are zero (83% of them on the synthetic hospital table: children
    slots of attributes at a leaf, empty class/sensitive channels), and the vectors are what
    crosses between processes on every step (about 60 MB/s over Dask's TLS on this machine), so
    they travel as positions and values: about a third of the bytes.
    """

    size: int
    index: np.ndarray
    values: np.ndarray


def _pack(vector: np.ndarray) -> np.ndarray | _Packed:
    index = np.flatnonzero(vector)
    if 3 * index.size > vector.size:  # dense enough: positions would cost more than zeros
        return vector
    dtype = np.int32 if vector.size < (1 << 31) else np.int64
    return _Packed(vector.size, index.astype(dtype), vector[index])


def _unpack(part: np.ndarray | _Packed) -> np.ndarray:
    if isinstance(part, np.ndarray):
        return part
    out = np.zeros(part.size, dtype=part.values.dtype)
    out[part.index] = part.values
    return out


def _sum(*parts: Any) -> Any:
    """The sum of the parts (packed vectors, or arrays such as atom histograms); a vector
    travels on packed. None for a step that returns nothing (``count_own_only``)."""
    if parts[0] is None:
        return None
    total = np.array(_unpack(parts[0]), copy=True)
    for part in parts[1:]:
        if isinstance(part, _Packed):
            total[part.index] += part.values
        else:
            total += part
    return _pack(total) if total.ndim == 1 else total


def _release_parts(
    key: str, done: int, encode: Encode, suppressed: np.ndarray | None, drop: bool
) -> int:
    """How many parts the shard's release is cut into (numbered from the shard's codes and
    kept by its ``LocalParty`` for the union's passes; a part's rows are encoded when it is
    asked for)."""
    whole = _current(key, done).party.released(encode, suppressed, drop)
    return whole.parts(RELEASE_BATCH_RECORDS)


def _release_part(
    key: str, done: int, encode: Encode, suppressed: np.ndarray | None, drop: bool, part: int
) -> ReleasedRows:
    """Part `part` of the shard's release: ``RELEASE_BATCH_RECORDS`` records at most."""
    whole = _current(key, done).party.released(encode, suppressed, drop)
    start = part * RELEASE_BATCH_RECORDS
    return whole.part(start, start + RELEASE_BATCH_RECORDS)


def _drop(key: str) -> None:
    _SHARDS.pop(key, None)


# ----------------------------------------------------------------- daemon side


class ShardedParty:
    """A party's counting state sharded by rows over Dask workers (one run)."""

    def __init__(
        self,
        client: Client,
        schema: Schema,
        shards: Sequence[Shard],
        columns: list[str],
        poll_seconds: float = POLL_SECONDS,
        kept: KeptShards | None = None,
    ) -> None:
        """`kept`: where the shards' encodings are kept (``DaskEngine``); a run restarts
        each shard from its encoding where its worker still holds it, and loads (and keeps)
        it otherwise. Without it every shard is loaded and nothing is kept."""
        self.schema = schema
        self.layout = StatsLayout.for_schema(schema)
        self.partitions = PartitionTable.for_schema(schema)
        self._client = client
        self._shards = list(shards)
        self._columns = columns
        self._poll = poll_seconds
        job = uuid.uuid4().hex
        self._keys = [f"fedanon-shard-{job}-{i}" for i in range(len(self._shards))]
        self._log: list[tuple[str, tuple[Any, ...]]] = []
        self.recoveries = 0  # shards reloaded and replayed after their worker was lost
        self._kept = kept
        workers = self._alive()
        if not workers:
            raise FedanonError("the Dask cluster has no workers")
        if kept is not None and kept.where is not None:
            self._where = list(kept.where)
            opened = [self._restart(i) for i in range(len(self._shards))]
        else:
            self._where = [workers[i % len(workers)] for i in range(len(self._shards))]
            opened = [self._place(i) for i in range(len(self._shards))]
        self._rows = [0] * len(self._shards)
        reloaded: set[int] = set()
        for i, future in enumerate(opened):
            if i in reloaded:
                continue
            try:
                self._rows[i] = self._result(future, {i: future})
            except _Lost as lost:  # a worker left while the shards loaded: load them again
                self._recover_until_stable(lost.shards, 0)
                reloaded |= set(lost.shards)

    @property
    def shard_count(self) -> int:
        return len(self._keys)

    @property
    def n_rows(self) -> int:
        return sum(self._rows)

    # ------------------------------------------------------------- placement, recovery
    def _alive(self) -> list[str]:
        return sorted(self._client.scheduler_info(n_workers=-1)["workers"])

    def _pinned(self, i: int, func: Any, *args: Any) -> Future:
        return self._client.submit(
            func, *args, workers=[self._where[i]], allow_other_workers=False, pure=False
        )

    def _place(self, i: int) -> Future:
        """Load shard `i` on its worker (the shard's rows travel with the task for a frame),
        keeping its encoding there for the job's later runs where the engine keeps them."""
        shard = self._client.scatter(self._shards[i], workers=[self._where[i]], hash=False)
        kept = None if self._kept is None else self._kept.keys[i]
        args = (self._keys[i], shard, self.schema, self._columns, kept)
        return self._pinned(i, _open_shard, *args)

    def _restart(self, i: int) -> Future:
        """Restart shard `i` from the encoding its worker kept (ShardLost: loaded again)."""
        assert self._kept is not None
        return self._pinned(i, _restart_shard, self._keys[i], self._kept.keys[i], self.schema)

    def placement(self) -> list[str]:
        """The worker of each shard now (recoveries move shards): where their kept encodings
        are."""
        return list(self._where)

    def _lost(self) -> list[int]:
        alive = set(self._alive())
        return [i for i, worker in enumerate(self._where) if worker not in alive]

    def _recover(self, i: int, done: int) -> None:
        """Reload shard `i` on the live worker with the fewest shards; replay the log's first
        `done` steps there."""
        alive = self._alive()
        if not alive:
            raise FedanonError("the Dask cluster lost all its workers")
        self.recoveries += 1
        load = {w: sum(1 for x in self._where if x == w) for w in alive}
        self._where[i] = min(alive, key=lambda w: (load[w], w))
        opened = self._place(i)
        self._rows[i] = self._result(opened, {i: opened})
        replay = self._pinned(i, _replay, self._keys[i], self._log[:done])
        self._result(replay, {i: replay})

    def _result(self, future: Future, watched: dict[int, Future]) -> Any:
        """`future`'s value, waiting while the shards' workers live (no-worker tasks would
        wait forever); raises ``_Lost`` naming the shards to recover (those whose worker left,
        and those of `watched`, futures by shard, that found no state or a stale one)."""
        while True:
            try:
                wait(future, timeout=self._poll)
            except TimeoutError:
                lost = self._lost()
                if lost:
                    raise _Lost(lost) from None
                continue
            if future.status == "finished":
                return future.result()
            gone = [
                i
                for i, part in watched.items()
                if part.status == "error" and isinstance(part.exception(), ShardLost)
            ]
            lost = self._lost()
            if gone or lost:
                raise _Lost(sorted(set(gone) | set(lost)))
            return future.result()  # the real error, re-raised here

    def _call(self, name: str, *args: Any) -> Any:
        """`name` on every shard, the results summed on the workers; a mutating call is
        logged first, so a shard lost during it is replayed up to it."""
        if name in _MUTATING:
            self._log.append((name, args))
            done = len(self._log) - 1
        else:
            done = len(self._log)
        parts: list[Future | None] = [None] * len(self._keys)
        for _attempt in range(MAX_RECOVERIES):
            for i, key in enumerate(self._keys):
                if parts[i] is None:
                    parts[i] = self._pinned(i, _step, key, done, name, args)
            ready = {i: part for i, part in enumerate(parts) if part is not None}
            total = _tree_sum(self._client, list(ready.values()))
            try:
                result = self._result(total, ready)
                return None if result is None else _unpack(result)
            except _Lost as lost:
                for i in lost.shards:
                    parts[i] = None
                self._recover_until_stable(lost.shards, done)
        raise FedanonError(f"the Dask cluster kept losing workers ({MAX_RECOVERIES} recoveries)")

    def _recover_until_stable(self, lost: list[int], done: int) -> None:
        """Recover every shard of `lost`, and any other whose worker leaves meanwhile."""
        queue = sorted(set(lost))
        for _attempt in range(MAX_RECOVERIES):
            try:
                while queue:
                    self._recover(queue[0], done)
                    queue.pop(0)
                return
            except _Lost as again:
                queue = sorted(set(queue) | set(again.shards))
        raise FedanonError(f"the Dask cluster kept losing workers ({MAX_RECOVERIES} recoveries)")

    # ------------------------------------------------------------- the count source
    def atom_histogram(self, attr: int, node: int) -> np.ndarray:
        result: np.ndarray = self._call("atom_histogram", attr, node)
        return result

    def start(self, splits: Sequence[DynamicSplit] = ()) -> np.ndarray:
        apply_splits(self.schema, splits)
        result: np.ndarray = self._call("start", tuple(splits))
        return result

    def count_own_only(self) -> None:
        """``LocalParty.count_own_only`` on every shard (a step of the log: a shard loaded
        again replays it), for a rerun's prefix probe."""
        self._call("count_own_only")

    def specialize(self, step: Specialization) -> np.ndarray:
        apply_splits(self.schema, step.splits)
        self.partitions.specialize(self.schema, step)
        result: np.ndarray = self._call("specialize", step)
        return result

    def generalized_table(
        self, suppressed: np.ndarray | None = None, drop_suppressed: bool = False
    ) -> pd.DataFrame:
        """The shards' generalized rows, concatenated in shard (= row) order."""
        done = len(self._log)
        args = ("generalized_table", (suppressed, drop_suppressed))
        tables = list(
            self._each_task(
                [(i, ()) for i in range(len(self._keys))],
                lambda i, _: self._pinned(i, _step, self._keys[i], done, *args),
                done,
            )
        )
        return pd.concat(tables) if len(tables) > 1 else tables[0]

    def released_rows(
        self, encode: Encode, suppressed: np.ndarray | None = None, drop_suppressed: bool = False
    ) -> Iterator[ReleasedRows]:
        """The shards' released records, made and encoded on their workers (`encode` travels
        there by reference: a module's function), in shard (= row) order and in parts of
        ``RELEASE_BATCH_RECORDS``: the daemon takes one part at a time (at most
        ``TASKS_AHEAD`` others made ahead wait on their workers)."""
        done = len(self._log)
        args = (encode, suppressed, drop_suppressed)
        shards = [(i, ()) for i in range(len(self._keys))]
        counts = self._each_task(
            shards, lambda i, _: self._pinned(i, _release_parts, self._keys[i], done, *args), done
        )
        parts = [(i, (part,)) for i, count in enumerate(counts) for part in range(count)]
        return self._each_task(
            parts,
            lambda i, part: self._pinned(i, _release_part, self._keys[i], done, *args, *part),
            done,
        )

    def _each_task(
        self, tasks: list[tuple[int, tuple[Any, ...]]], submit: Any, done: int
    ) -> Iterator[Any]:
        """The result of `submit(shard, extra)` (a future) for every task (shard, extra), in
        order, taken from the workers one at a time, with at most ``TASKS_AHEAD`` tasks
        submitted beyond the one being taken (so at most that many results wait in the
        workers' memory). A shard lost before its tasks' results were taken is recovered
        (replayed up to `done` steps) and its submitted tasks submitted again."""
        futures: dict[int, Future] = {}
        submitted = 0
        for t in range(len(tasks)):
            while submitted < min(len(tasks), t + 1 + TASKS_AHEAD):
                futures[submitted] = submit(*tasks[submitted])
                submitted += 1
            for _attempt in range(MAX_RECOVERIES):
                watched = {tasks[u][0]: future for u, future in futures.items()}
                watched[tasks[t][0]] = futures[t]  # its shard's error is this task's
                try:
                    result = self._result(futures[t], watched)
                    break
                except _Lost as lost:
                    self._recover_until_stable(lost.shards, done)
                    for u in futures:
                        if tasks[u][0] in lost.shards:
                            futures[u] = submit(*tasks[u])
            else:
                raise FedanonError(
                    f"the Dask cluster kept losing workers ({MAX_RECOVERIES} recoveries)"
                )
            del futures[t]  # its worker may forget the result
            yield result
            del result  # nor is it held here while the next one is taken

    def close(self) -> None:
        """Drop the shards' state on their workers (a lost worker took its shards with it)."""
        alive = set(self._alive())
        drops = [
            self._pinned(i, _drop, key)
            for i, key in enumerate(self._keys)
            if self._where[i] in alive
        ]
        self._keys = []
        # A busy worker drops them later; the state is unreachable either way.
        with contextlib.suppress(TimeoutError):
            wait(drops, timeout=CLOSE_SECONDS)


@dataclass
class KeptShards:
    """The shards of a job whose encodings the workers keep between its runs (one job at a
    time: ``DaskEngine``): what the encodings depend on, the shards' recipes (to load one
    again), the key each encoding is kept under, and the worker of each after the last run
    (None before the first; a stale one only costs a reload)."""

    depends_on: Encoding
    shards: list[Shard]
    keys: list[str]
    where: list[str] | None = None

    @classmethod
    def new(cls, depends_on: Encoding, shards: list[Shard]) -> KeptShards:
        job = uuid.uuid4().hex
        return cls(depends_on, shards, [f"fedanon-encoding-{job}-{i}" for i in range(len(shards))])


def _kept_key(source: TableSource, columns: list[str], schema: Schema) -> Encoding | None:
    """What the shards' encodings depend on, for a source whose rows cannot change: a table
    read whole as Arrow (a daemon's CSV). None for the others: a Parquet dataset is read from
    its files by the workers at every run (they may change on disk between runs), a DataFrame
    may change in place; and for a dynamic tree (it grows in a run)."""
    if not isinstance(source, ArrowSource):
        return None
    return Encoding.of(source.whole(), columns, schema)


def _forget_kept(keys: list[str]) -> None:
    """Drop these kept encodings from this worker (run on every worker: a recovery may have
    left one where the last placement does not say)."""
    for key in keys:
        _ENCODED.pop(key, None)


class _Lost(Exception):
    """Shards whose state is gone (their worker left, or it answered ShardLost)."""

    def __init__(self, shards: list[int]) -> None:
        super().__init__(shards)
        self.shards = shards


def _tree_sum(client: Client, parts: list[Future]) -> Future:
    """One future of the sum of `parts`, summed on the workers in a tree of ``SUM_FAN_IN``."""
    while len(parts) > 1:
        parts = [
            client.submit(_sum, *parts[at : at + SUM_FAN_IN], pure=False)
            for at in range(0, len(parts), SUM_FAN_IN)
        ]
    return parts[0]


def _security(settings: EngineSettings) -> Security | None:
    """Dask's TLS for a ``tls://`` scheduler, with the party's own certificate files."""
    if settings.scheduler is None or not settings.scheduler.startswith("tls://"):
        return None
    if settings.tls is None:
        raise FedanonError(f"scheduler {settings.scheduler} is tls:// but the party has no [tls]")
    ca, cert, key = (str(p) for p in settings.tls)
    return Security(
        tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key, require_encryption=True
    )


class DaskEngine:
    """Shards every run over a Dask cluster: the scheduler named, or a local one it starts."""

    def __init__(self, settings: EngineSettings, client: Client | None = None) -> None:
        """`client`: a cluster the caller owns (and closes), instead of `settings`' one."""
        self.settings = settings
        self._cluster: LocalCluster | None = None
        self._client: Client | None = client
        self._owns_client = client is None
        self._current: ShardedParty | None = None
        self._kept: KeptShards | None = None  # the last job's encodings, on the workers

    @property
    def client(self) -> Client:
        """Connected on first use (a daemon that serves no LKC job starts no cluster)."""
        if self._client is None:
            settings = self.settings
            if settings.scheduler is not None:
                try:
                    self._client = Client(
                        settings.scheduler, security=_security(settings), timeout=CONNECT_SECONDS
                    )
                except (OSError, TimeoutError) as exc:
                    raise FedanonError(
                        f"Dask scheduler {settings.scheduler}: cannot connect "
                        f"({one_line(str(exc)) or type(exc).__name__})"
                    ) from None
            else:
                try:
                    self._cluster = local_cluster(settings.workers, settings.shards)
                except (RuntimeError, OSError) as exc:  # a worker process that cannot start
                    raise FedanonError(
                        f"cannot start a local Dask cluster of {settings.workers} worker "
                        f"processes ({one_line(str(exc))})"
                    ) from None
                self._client = Client(self._cluster)
        return self._client

    def open(self, schema: Schema, source: TableSource, columns: list[str]) -> ShardedParty:
        """A run over `source`'s shards. The workers keep the last job's encodings (one job:
        memory bounded by one encoded table, as ``LocalEngine`` keeps one): a run with the
        same table, columns and schema restarts each shard from its encoding instead of
        sending and encoding its rows again; any other replaces them."""
        if self._current is not None:  # one run at a time: the previous run's shards go
            if self._kept is not None:
                self._kept.where = self._current.placement()
            self._current.close()
            self._current = None
        depends_on = _kept_key(source, columns, schema)
        kept = self._kept
        if kept is not None and (depends_on is None or not kept.depends_on.same(depends_on)):
            self._forget()
            kept = None
        if kept is None and depends_on is not None:
            kept = self._kept = KeptShards.new(depends_on, source.shards(self.settings.shards))
        shards = kept.shards if kept is not None else source.shards(self.settings.shards)
        self._current = ShardedParty(self.client, schema, shards, columns, kept=kept)
        return self._current

    def _forget(self) -> None:
        """Drop the kept encodings from every worker."""
        if self._kept is not None and self._client is not None:
            self._client.run(_forget_kept, self._kept.keys)
        self._kept = None

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
        if self._client is not None:
            with contextlib.suppress(OSError, TimeoutError):  # a cluster already gone
                self._forget()
        if self._client is not None and self._owns_client:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._client = self._cluster = self._current = None


def local_cluster(workers: int, shards: int) -> LocalCluster:
    """A cluster on this machine: `workers` processes (over Dask's TLS, certificates made for
    the cluster's lifetime), or with 0 one in-process worker with a thread per shard (at most
    one per CPU)."""
    if workers > 0:
        return loopback_cluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            security=Security.temporary(),
        )
    threads = max(1, min(shards, os.cpu_count() or 1))
    return loopback_cluster(n_workers=1, threads_per_worker=threads, processes=False)


#: Where the HTTP servers of a cluster fedanon starts listen: loopback, a free port.
LOOPBACK_HTTP = "127.0.0.1:0"
#: The Dask configuration (also set by ``DASK_*`` environment variables) a local cluster never
#: takes from the site: where its scheduler tells its workers to reach it. A contact address
#: meant for a site's own cluster (``DASK_DISTRIBUTED__SCHEDULER__CONTACT_ADDRESS``) sent the
#: local workers elsewhere: an in-process cluster hung for ever, one of processes failed.
LOCAL_ONLY_CONFIG = {"distributed.scheduler.contact-address": None}


def loopback_cluster(**options: Any) -> LocalCluster:
    """A ``LocalCluster(**options)`` that listens on loopback only (every cluster fedanon, its
    tests and its benches start). Its scheduler and each worker always start an HTTP server,
    also with ``dashboard_address=None`` (distributed/node.py, ``start_http_server``): the
    scheduler's on port 8787, a worker's on a free one, each on the host of its comm address,
    which for an in-process cluster (``inproc://``) is every interface. A hospital's daemon
    must open no unauthenticated port to its network, so both are asked for loopback and a free
    port (the scheduler's dashboard stays off; a worker's is served only if Bokeh is installed,
    on loopback). The comm ports (scheduler, nannies, workers) are loopback already: LocalCluster
    binds them to 127.0.0.1 unless a host is given, and its scheduler is reached there
    whatever the site's Dask configuration says (``LOCAL_ONLY_CONFIG``)."""
    with dask.config.set(LOCAL_ONLY_CONFIG):
        return LocalCluster(
            **options,
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": LOOPBACK_HTTP},
            worker_dashboard_address=LOOPBACK_HTTP,
        )
