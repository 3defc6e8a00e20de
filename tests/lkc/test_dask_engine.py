"""The Dask counting engine releases exactly what the one-process party releases.

Counts add up over row shards, so a party sharded over Dask workers must give the engine the
same vectors at every step, hence the same specializations and the same release, whatever the
number and sizes of the shards. These tests run the whole LKC loop against both engines on the
synthetic hospital table (a dynamic numerical attribute included, whose splits every shard must
grow alike) and compare the releases as written CSV bytes.
"""

from __future__ import annotations

import copy
import io
import os
import signal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

import itertools

from distributed import Client, LocalCluster
from distributed.security import Security

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.engine import LKCEngine, StepInfo
from fedanon.algorithms.tds.engines import EngineSettings, counting_engine, sharded
from fedanon.algorithms.tds.engines.sharded import DaskEngine, ShardedParty, loopback_cluster
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.crypto.identity import create_ca, issue_identity, save_ca, save_identity
from fedanon.errors import FedanonError
from fedanon.party.records import LocalRecords, encode_record
from fedanon.party.union import record_bytes
from fedanon.readers.sources import FrameShard, FrameSource, ParquetSource
from fedanon.schema import LKCParams, Schema
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy

ROWS = 3000
PARAMS = LKCParams.of(2, 10, "0.5")


@pytest.fixture(scope="module")
def client():
    """One in-process cluster (threads) for the module: the machine has two cores."""
    with (
        loopback_cluster(
            n_workers=2,
            threads_per_worker=1,
            processes=False,
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def _case(dynamic: bool = True) -> tuple[Schema, pd.DataFrame]:
    table = generate_hospital(ROWS, seed=3).drop(columns=["patient_id"])
    taxonomy = load_taxonomy(hospital_taxonomy_path(), data_columns=list(table.columns))
    schema = build_schema(taxonomy, table, dynamic=["length_of_stay"] if dynamic else [])
    return schema, table


def _csv(frame: pd.DataFrame) -> bytes:
    out = io.StringIO()
    frame.reset_index(drop=True).astype(str).to_csv(out, index=False)
    return out.getvalue().encode()


def _run_local(schema: Schema, table: pd.DataFrame) -> tuple[list, bytes]:
    schema = copy.deepcopy(schema)
    party = LocalParty(schema, table)
    result = LKCEngine(schema, PARAMS).run(party)
    return result.specializations, _csv(party.generalized_table())


def _run_sharded(client: Client, schema: Schema, shards: list) -> tuple[list, bytes, int]:
    schema = copy.deepcopy(schema)
    party = ShardedParty(client, schema, shards, list(shards[0].frame.columns))
    try:
        result = LKCEngine(schema, PARAMS).run(party)
        return result.specializations, _csv(party.generalized_table()), party.n_rows
    finally:
        party.close()


@pytest.mark.parametrize("count", [1, 2, 7])
def test_release_is_byte_identical_for_any_shard_count(client, count):
    schema, table = _case()
    steps, release = _run_local(schema, table)
    shards = FrameSource(table).shards(count)
    assert len(shards) == count
    got_steps, got_release, rows = _run_sharded(client, schema, shards)
    assert rows == len(table)
    assert len(steps) > 5  # a real run, not the all-root table
    assert got_steps == steps
    assert got_release == release


@pytest.mark.parametrize("count", [1, 2, 7])
def test_the_union_reads_the_release_shard_by_shard_with_the_same_records(client, count):
    """The records the union seals come one batch per shard, made on the shard's worker, no
    batch larger than its shard, and are the one-process party's records in row order."""
    schema, table = _case()
    local_schema = copy.deepcopy(schema)
    local = LocalParty(local_schema, table)
    LKCEngine(local_schema, PARAMS).run(local)
    expected = record_bytes(local.generalized_table())
    sharded_schema = copy.deepcopy(schema)
    shards = FrameSource(table).shards(count)
    party = ShardedParty(client, sharded_schema, shards, list(table.columns))
    try:
        LKCEngine(sharded_schema, PARAMS).run(party)
        batches = list(party.released_rows(encode_record))
        assert [len(b) for b in batches] == [len(s.frame) for s in shards]
        assert LocalRecords(lambda: batches).expand() == expected
        records = LocalRecords(lambda: party.released_rows(encode_record))  # read twice
        assert records.expand() == expected and len(records) == len(table)
    finally:
        party.close()


def _run_locally_and_shard(client: Client) -> tuple[LocalParty, Schema, ShardedParty]:
    """`_case()` run by the one-process party, and a fresh copy of its schema with a party
    over two shards of its table (not run yet)."""
    schema, table = _case()
    local_schema = copy.deepcopy(schema)
    local = LocalParty(local_schema, table)
    LKCEngine(local_schema, PARAMS).run(local)
    sharded_schema = copy.deepcopy(schema)
    party = ShardedParty(client, sharded_schema, FrameSource(table).shards(2), list(table.columns))
    return local, sharded_schema, party


def test_a_shard_release_reaches_the_daemon_in_parts_of_bounded_size(client, monkeypatch):
    """Shards larger than a batch: the daemon takes each shard's release in parts of at most
    ``RELEASE_BATCH_RECORDS`` records, in row order, and the records are unchanged."""
    monkeypatch.setattr(sharded, "RELEASE_BATCH_RECORDS", 400)
    local, sharded_schema, party = _run_locally_and_shard(client)
    try:
        LKCEngine(sharded_schema, PARAMS).run(party)
        batches = list(party.released_rows(encode_record))
        assert [len(b) for b in batches] == [400, 400, 400, 300] * 2
        assert all(max(b.codes, default=0) < len(b.rows) for b in batches)
        expected = record_bytes(local.generalized_table())
        assert LocalRecords(lambda: batches).expand() == expected
    finally:
        party.close()


def test_skewed_shards_give_the_same_release(client):
    """One huge shard, one-row shards, and a shard whose records all share one class."""
    schema, table = _case()
    steps, release = _run_local(schema, table)
    cuts = [0, 1, 2, 2900, 2901, len(table)]
    shards = [FrameShard(table.iloc[lo:hi]) for lo, hi in itertools.pairwise(cuts)]
    got_steps, got_release, _ = _run_sharded(client, schema, shards)
    assert got_steps == steps
    assert got_release == release


def test_suppressed_partitions_are_released_alike(client):
    """Record suppression names partitions of T_g: every shard must suppress the same ones."""
    schema, table = _case(dynamic=False)
    local_schema, sharded_schema = copy.deepcopy(schema), copy.deepcopy(schema)
    local = LocalParty(local_schema, table)
    result = LKCEngine(local_schema, LKCParams.of(8, 20, "0.3"), suppress=0.02).run(local)
    assert result.suppressed_partitions.size > 0
    shards = FrameSource(table).shards(3)
    sharded = ShardedParty(client, sharded_schema, shards, list(table.columns))
    try:
        again = LKCEngine(sharded_schema, LKCParams.of(8, 20, "0.3"), suppress=0.02).run(sharded)
        assert again.specializations == result.specializations
        for drop in (False, True):
            assert _csv(sharded.generalized_table(again.suppressed_partitions, drop)) == _csv(
                local.generalized_table(result.suppressed_partitions, drop)
            )
            union_input = LocalRecords(
                lambda d=drop: sharded.released_rows(encode_record, again.suppressed_partitions, d)
            )
            assert union_input.expand() == record_bytes(
                local.generalized_table(result.suppressed_partitions, drop)
            )
    finally:
        sharded.close()


def test_parquet_dataset_is_read_by_the_workers(client, tmp_path: Path):
    """A directory of Parquet partitions: one shard per file, read where it is counted."""
    schema, table = _case()
    steps, release = _run_local(schema, table)
    bounds = [0, 500, 1700, 1701, len(table)]
    for n, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        table.iloc[lo:hi].astype(str).to_parquet(tmp_path / f"part-{n:03d}.parquet", index=False)
    source = ParquetSource(tmp_path)
    assert source.n_rows == len(table) and source.columns == list(table.columns)
    for count in (1, 2, 3):  # files grouped, in order, every row once
        loaded = [shard.load(source.columns) for shard in source.shards(count)]
        assert len(loaded) == count
        assert _csv(pd.concat(loaded)) == _csv(table)
    engine = DaskEngine(EngineSettings(name="dask", shards=8), client)  # the module's cluster
    sharded_schema = copy.deepcopy(schema)
    party = engine.open(sharded_schema, source, source.columns)
    assert party.shard_count == 4  # one shard per partition file, never more
    result = LKCEngine(sharded_schema, PARAMS).run(party)
    assert result.specializations == steps
    assert _csv(party.generalized_table()) == release
    engine.close()
    assert client.status == "running"  # the caller's client stays open


def test_a_shard_error_reaches_the_daemon_as_the_party_error(client):
    """A class value outside the job's: the same one-line error as the one-process party."""
    schema, table = _case()
    table = table.copy()
    table.loc[2500, "readmitted"] = "maybe"
    with pytest.raises(FedanonError, match="class column 'readmitted': value 'maybe'"):
        LocalParty(copy.deepcopy(schema), table)
    with pytest.raises(FedanonError, match="class column 'readmitted': value 'maybe'"):
        ShardedParty(
            client, copy.deepcopy(schema), FrameSource(table).shards(2), list(table.columns)
        )


def test_unknown_engine_is_one_line_naming_the_choices():
    with pytest.raises(
        FedanonError, match=r"unknown counting engine 'spark' \(choose from local, dask\)"
    ):
        counting_engine(EngineSettings(name="spark"))


def test_vectors_are_summed_on_the_workers(client):
    """The daemon receives one vector per step, equal to the one-process party's."""
    schema, table = _case()
    local = LocalParty(copy.deepcopy(schema), table)
    sharded = ShardedParty(
        client, copy.deepcopy(schema), FrameSource(table).shards(7), list(table.columns)
    )
    try:
        np.testing.assert_array_equal(sharded.start(), local.start())
    finally:
        sharded.close()


@pytest.mark.slow
def test_a_worker_killed_mid_job_is_replayed_and_the_release_is_unchanged():
    """Two worker processes; one is killed (SIGKILL) after the third specialization. Its
    shards are reloaded on the survivor (or the nanny's replacement) and the step log replayed
    there: the run goes on with the same choices and the same release."""
    schema, table = _case()
    steps, release = _run_local(schema, table)
    with (
        loopback_cluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
        ) as cluster,
        Client(cluster) as c,
    ):
        sharded_schema = copy.deepcopy(schema)
        party = ShardedParty(c, sharded_schema, FrameSource(table).shards(4), list(table.columns))
        victim = party._where[0]
        pid = c.run(os.getpid, workers=[victim])[victim]
        killed = []

        def kill_after_third(info: StepInfo) -> None:
            if info.iteration == 3:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

        result = LKCEngine(sharded_schema, PARAMS, on_step=kill_after_third).run(party)
        assert killed and party.recoveries >= 2  # shards 0 and 2 lived on the victim
        assert victim not in party._where
        assert result.specializations == steps
        assert _csv(party.generalized_table()) == release
        party.close()


def _tls_cluster(certs: Path, name: str) -> LocalCluster:
    """A cluster whose scheduler and worker speak only Dask's TLS with `name`'s certificate."""
    security = Security(
        tls_ca_file=str(certs / "ca.crt"),
        tls_client_cert=str(certs / f"{name}.crt"),
        tls_client_key=str(certs / f"{name}.key"),
        tls_scheduler_cert=str(certs / f"{name}.crt"),
        tls_scheduler_key=str(certs / f"{name}.key"),
        tls_worker_cert=str(certs / f"{name}.crt"),
        tls_worker_key=str(certs / f"{name}.key"),
        require_encryption=True,
    )
    return loopback_cluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        security=security,
        protocol="tls://",
    )


def test_a_tls_scheduler_is_reached_with_the_party_certificate(tmp_path: Path):
    """[table] scheduler = "tls://...": the daemon connects with its own certificate files,
    the run gives the one-process release; a party of another CA is refused in one line."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for where, ca_name in ((ours, "hospital CA"), (theirs, "another CA")):
        ca = create_ca(ca_name)
        save_ca(ca, where)
        for name in ("dask-cluster", "hospital-a"):
            save_identity(issue_identity(ca, name, "party"), where)
    schema, table = _case()
    steps, release = _run_local(schema, table)
    with _tls_cluster(ours, "dask-cluster") as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tls://")
        files = (ours / "ca.crt", ours / "hospital-a.crt", ours / "hospital-a.key")
        engine = counting_engine(EngineSettings("dask", shards=2, scheduler=address, tls=files))
        sharded_schema = copy.deepcopy(schema)
        party = engine.open(sharded_schema, FrameSource(table), list(table.columns))
        assert LKCEngine(sharded_schema, PARAMS).run(party).specializations == steps
        assert _csv(party.generalized_table()) == release
        engine.close()
        stranger = (theirs / "ca.crt", theirs / "hospital-a.crt", theirs / "hospital-a.key")
        refused = counting_engine(EngineSettings("dask", scheduler=address, tls=stranger))
        with pytest.raises(FedanonError, match=f"Dask scheduler {address}: cannot connect"):
            refused.open(copy.deepcopy(schema), FrameSource(table), list(table.columns))


@pytest.mark.parametrize("damage", ["forgotten", "stale"])
def test_a_shard_whose_state_is_gone_or_stale_is_reloaded_and_replayed(client, damage):
    """A worker that answers for a shard without its state (restarted under the same address)
    or with a stale one (behind the step log) must not be summed: the shard is reloaded and
    the log replayed, and the release is unchanged."""
    schema, table = _case()
    steps, release = _run_local(schema, table)
    sharded_schema = copy.deepcopy(schema)
    party = ShardedParty(client, sharded_schema, FrameSource(table).shards(3), list(table.columns))
    key = party._keys[1]

    def damage_after_second(info: StepInfo) -> None:
        if info.iteration == 2:  # the in-process cluster shares this module's registry
            if damage == "forgotten":
                del sharded._SHARDS[key]
            else:
                sharded._SHARDS[key].done -= 1

    try:
        result = LKCEngine(sharded_schema, PARAMS, on_step=damage_after_second).run(party)
        assert party.recoveries == 1
        assert result.specializations == steps
        assert _csv(party.generalized_table()) == release
    finally:
        party.close()


def test_the_release_is_read_with_a_bounded_number_of_parts_ahead(client, monkeypatch):
    """A computed part waits in its worker's memory until the daemon takes it: the daemon
    keeps at most ``TASKS_AHEAD`` parts submitted beyond the one it takes (all of them at
    once held a 100M-row release in the workers), and the records are unchanged."""
    monkeypatch.setattr(sharded, "RELEASE_BATCH_RECORDS", 400)
    monkeypatch.setattr(sharded, "TASKS_AHEAD", 2)
    local, sharded_schema, party = _run_locally_and_shard(client)
    submitted: list[int] = []
    pinned = party._pinned

    def counting(i: int, func, *args):
        if func is sharded._release_part:
            submitted.append(i)
        return pinned(i, func, *args)

    monkeypatch.setattr(party, "_pinned", counting)
    try:
        LKCEngine(sharded_schema, PARAMS).run(party)
        batches = []
        for taken, batch in enumerate(party.released_rows(encode_record)):
            assert len(submitted) == min(8, taken + 1 + 2)
            batches.append(batch)
        assert submitted == [0, 0, 0, 0, 1, 1, 1, 1]
        assert [len(b) for b in batches] == [400, 400, 400, 300] * 2
        assert LocalRecords(lambda: batches).expand() == record_bytes(local.generalized_table())
    finally:
        party.close()
