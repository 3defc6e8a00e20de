"""A party whose counting runs on Dask, among plain parties: the release is unchanged.

Real daemons over mutual TLS; the first party counts on a local Dask cluster in its daemon
([table] engine = "dask", 3 row shards), the others in-process. The release must equal the
centralized one (rows, cut, specialization sequence) and, sorted, the all-plain federation's
release byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")

from fedanon.algorithms.tds.engines import EngineSettings
from fedanon.leader.sim import federation, split_table
from fedanon.synth import generate_hospital
from tests.distributed.conftest import (
    Dataset,
    assert_same_release,
    centralized,
    hospital_dataset,
    run_distributed,
    run_matches_centralized,
)
from tests.distributed.test_cli import ROWS, SEED, fedanon, sim_args, wait_gone


def _sorted_lines(path: Path) -> list[bytes]:
    header, *body = path.read_bytes().splitlines()
    return [header, *sorted(body)]


@pytest.mark.slow
def test_sharded_party_among_plain_ones_releases_the_same(
    hospital_data: Dataset, tmp_path: Path
) -> None:
    spec = hospital_data.spec(L=3, K=20, C="0.2")
    parts = split_table(hospital_data.table, 3, "random", seed=1)
    plain = tmp_path / "plain.csv"
    with federation(parts, hospital_data.taxonomy_path, secure=True) as fed:
        run_distributed(fed.hops, fed.leader_tls, hospital_data, spec, plain)
    sharded = tmp_path / "sharded.csv"
    engines: list[EngineSettings | None] = [EngineSettings(name="dask", shards=3), None, None]
    with federation(parts, hospital_data.taxonomy_path, secure=True, engine=engines) as fed:
        assert '[table]\nengine = "dask"\nshards = 3' in fed.daemons[0].config.read_text()
        report = run_matches_centralized(fed, hospital_data, spec, sharded)
    assert report["specializations"] >= 5
    assert _sorted_lines(sharded) == _sorted_lines(plain)


@pytest.mark.slow
def test_sim_runs_every_party_on_a_dask_cluster(tmp_path: Path) -> None:
    """``fedanon sim lkc --engine dask --shards 3``: every party.toml asks for the Dask engine
    with 3 shards, and the release equals the centralized one."""
    data = tmp_path / "hospital.csv"
    generate_hospital(ROWS, SEED).to_csv(data, index=False)
    out, report, workdir = tmp_path / "release.csv", tmp_path / "report.json", tmp_path / "w"
    args = sim_args(data, workdir, out, "--report", str(report), "--engine", "dask")
    run = fedanon(*args, "--shards", "3")
    assert run.code == 0, run.err
    configs = sorted(workdir.glob("hospital-*.toml"))
    assert len(configs) == 3
    assert all('engine = "dask"\nshards = 3' in c.read_text() for c in configs)
    dataset = hospital_dataset(ROWS, SEED)
    parsed = json.loads(report.read_text())
    assert_same_release(out, parsed, centralized(dataset, dataset.spec(L=3, K=20, C="0.2")))
    assert not wait_gone(str(workdir))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--shards", "2"], "fedanon: error: --shards needs --engine dask"),
        (["--engine", "dask", "--shards", "0"], "--shards must be between 1 and 4096 (got 0)"),
        (["--engine", "spark"], "invalid choice: 'spark'"),
    ],
)
@pytest.mark.slow
def test_sim_engine_options_are_checked_in_one_line(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    data = tmp_path / "hospital.csv"
    generate_hospital(50, SEED).to_csv(data, index=False)
    out = tmp_path / "release.csv"
    run = fedanon(*sim_args(data, tmp_path / "w", out, *extra), timeout=60)
    assert run.code == 2
    assert message in run.err and "Traceback" not in run.err
    assert not out.exists() and not (tmp_path / "w").exists()


@pytest.mark.slow
def test_a_party_serving_a_parquet_dataset_from_its_workers(
    hospital_data: Dataset, tmp_path: Path
) -> None:
    """party.toml: `data` a directory of Parquet files, `[table] shards = 3` (the Dask engine
    implied). The daemon restarted on that configuration reads only the files' footers (its
    source is the dataset); the job's release equals the centralized one."""
    parts = split_table(hospital_data.table, 3, "random", seed=2)
    dataset = tmp_path / "hospital-1-dataset"
    dataset.mkdir()
    for n, rows in enumerate(np.array_split(np.arange(len(parts[0])), 4)):
        parts[0].iloc[rows].astype(str).to_parquet(dataset / f"part-{n}.parquet", index=False)
    with federation(parts, hospital_data.taxonomy_path, secure=True) as fed:
        first = fed.daemons[0]
        fed.stop(first)
        text = first.config.read_text()
        data_line = next(line for line in text.splitlines() if line.startswith("data = "))
        Path(data_line.split('"')[1]).unlink()  # only the dataset is left to read
        first.config.write_text(
            text.replace(data_line, f'data = "{dataset}"') + "[table]\nshards = 3\n"
        )
        fed.start(first)
        fed.wait_ready(first)
        spec = hospital_data.spec(L=3, K=20, C="0.2")
        run_matches_centralized(fed, hospital_data, spec, tmp_path / "release.csv")
