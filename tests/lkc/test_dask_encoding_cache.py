"""The Dask engine keeps its shards' encodings across the runs of a job (#28, session 12).

A daemon opens its table through its counting engine at every session: an exclusion's rerun
and every later job of the same schema. The one-process engine keeps one encoding
(tests/party/test_encoding_cache.py); the Dask engine sent every shard's rows to its worker and
encoded them again at every run. Its workers now keep the last job's encodings (one job), a run
of the same table, columns and schema restarts each shard from its own; anything the encoding
depends on that differs encodes again, and every run counts as a freshly loaded party.
"""

from __future__ import annotations

import copy
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("distributed")

from distributed import Client

from fedanon.algorithms.tds.engines import EngineSettings, sharded
from fedanon.algorithms.tds.engines.sharded import DaskEngine, loopback_cluster
from fedanon.readers.sources import ArrowSource, FrameSource, ParquetSource
from fedanon.schema import Schema
from fedanon.taxonomy.files import SensitiveValue
from tests.lkc.test_dask_engine import client
from tests.party.test_encoding_cache import (
    COLUMNS,
    DATA,
    TABLE,
    _fresh,
    _schema,
    _steps,
    encodings,
)

__all__ = ["client", "encodings"]  # the fixtures, shared

SHARDS = 3


@pytest.fixture
def engine(client: Client) -> Iterator[DaskEngine]:
    engine = DaskEngine(EngineSettings("dask", shards=SHARDS), client)
    try:
        yield engine
    finally:
        engine.close()
    assert not sharded._ENCODED, "a closed engine leaves no encoding on its workers"


def _expected(schema: Schema, table: pa.Table = TABLE) -> list[np.ndarray]:
    return _fresh(copy.deepcopy(schema), table, COLUMNS)


def test_a_second_run_of_the_same_job_restarts_from_the_workers_encodings(
    engine: DaskEngine, encodings: list[int]
) -> None:
    source = ArrowSource(TABLE)
    expected = _expected(_schema())
    encodings.clear()
    first = _steps(engine.open(_schema(), source, COLUMNS), 2)
    assert len(encodings) == SHARDS and sum(encodings) == len(DATA.table)
    second = _steps(engine.open(_schema(), source, COLUMNS), 2)  # a rerun: a new schema object
    third = engine.open(_schema(), source, COLUMNS)
    assert len(encodings) == SHARDS, "a run of the same job encoded its shards again"
    for counts in (first, second, _steps(third, 2)):
        for ours, theirs in zip(counts, expected, strict=True):
            assert np.array_equal(ours, theirs)
    assert third.recoveries == 0
    assert len(sharded._ENCODED) == SHARDS  # one job's encodings


def test_a_job_that_differs_in_what_the_encoding_depends_on_encodes_again(
    engine: DaskEngine, encodings: list[int]
) -> None:
    other = _schema(sensitive=[SensitiveValue("diagnosis", "Schizophrenia")])
    expected = _expected(other)
    source = ArrowSource(TABLE)
    encodings.clear()
    engine.open(_schema(), source, COLUMNS).start()
    party = engine.open(copy.deepcopy(other), source, COLUMNS)
    assert len(encodings) == 2 * SHARDS, "a stale encoding served another job"
    for ours, theirs in zip(_steps(party, 2), expected, strict=True):
        assert np.array_equal(ours, theirs)
    assert len(sharded._ENCODED) == SHARDS  # the first job's went
    copied = ArrowSource(copy.deepcopy(TABLE))  # another table of the same content
    engine.open(_schema(), copied, COLUMNS)
    assert len(encodings) == 3 * SHARDS


def test_a_table_that_may_change_is_loaded_for_every_run(
    engine: DaskEngine, encodings: list[int]
) -> None:
    """A DataFrame (the Python API's) may change in place between runs: never kept."""
    source = FrameSource(DATA.table.astype(str))
    encodings.clear()
    engine.open(_schema(), source, COLUMNS).start()
    engine.open(_schema(), source, COLUMNS).start()
    assert len(encodings) == 2 * SHARDS
    assert not sharded._ENCODED


def test_a_parquet_dataset_is_read_by_the_workers_at_every_run(
    engine: DaskEngine, encodings: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dataset's files may change on disk between runs: read again every time, never kept,
    and never loaded whole into the daemon to key it."""
    frame = DATA.table.astype(str)
    frame.iloc[:300].to_parquet(tmp_path / "part-0.parquet", index=False)
    frame.iloc[300:].to_parquet(tmp_path / "part-1.parquet", index=False)

    def whole(self: ParquetSource) -> None:
        raise AssertionError("the daemon loaded the whole dataset")

    monkeypatch.setattr(ParquetSource, "whole", whole)
    source = ParquetSource(tmp_path)
    encodings.clear()
    engine.open(_schema(), source, COLUMNS).start()
    engine.open(_schema(), source, COLUMNS).start()
    assert len(encodings) == 4
    assert not sharded._ENCODED


def test_a_worker_that_lost_its_encoding_loads_its_shard_again(
    engine: DaskEngine, encodings: list[int]
) -> None:
    """A worker restarted between two runs holds no encoding: its shard is loaded again (and
    kept again), and the run counts as a fresh party."""
    source = ArrowSource(TABLE)
    expected = _expected(_schema())
    engine.open(_schema(), source, COLUMNS).start()
    encodings.clear()
    lost = sorted(sharded._ENCODED)[1]
    del sharded._ENCODED[lost]
    party = engine.open(_schema(), source, COLUMNS)
    assert len(encodings) == 1 and party.recoveries == 1
    for ours, theirs in zip(_steps(party, 2), expected, strict=True):
        assert np.array_equal(ours, theirs)
    assert lost in sharded._ENCODED
    engine.open(_schema(), source, COLUMNS).start()
    assert len(encodings) == 1


def _kept_here() -> int:
    return len(sharded._ENCODED)


def test_worker_processes_keep_their_shards_and_a_killed_one_loads_them_again() -> None:
    """Two worker processes: each keeps the encodings of the shards it loaded; the next run of
    the job restarts every shard where it is (no reload); one worker killed (SIGKILL) between
    two runs takes its encodings with it, and its shards are loaded again elsewhere. Every
    run counts as a fresh party."""
    source = ArrowSource(TABLE)
    expected = _expected(_schema())
    with (
        loopback_cluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
        ) as cluster,
        Client(cluster) as c,
    ):
        engine = DaskEngine(EngineSettings("dask", shards=4), c)
        try:
            first = engine.open(_schema(), source, COLUMNS)
            assert _steps(first, 2)[0].size == expected[0].size
            assert sum(c.run(_kept_here).values()) == 4
            second = engine.open(_schema(), source, COLUMNS)
            for ours, theirs in zip(_steps(second, 2), expected, strict=True):
                assert np.array_equal(ours, theirs)
            assert second.recoveries == 0
            victim = second.placement()[0]
            pid = c.run(os.getpid, workers=[victim])[victim]
            os.kill(pid, signal.SIGKILL)
            third = engine.open(_schema(), source, COLUMNS)
            for ours, theirs in zip(_steps(third, 2), expected, strict=True):
                assert np.array_equal(ours, theirs)
            assert third.recoveries >= 2  # shards 0 and 2 were the victim's
        finally:
            engine.close()
        assert sum(c.run(_kept_here).values()) == 0
