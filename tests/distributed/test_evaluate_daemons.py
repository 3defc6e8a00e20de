"""The LKC paper's utility protocol (BE/CE/UE) over real party daemons, each its own process
with mutual TLS on loopback (the shared ``hospital_federation``), without pooling a record.

Oracle: ``fedanon.utility.evaluation.evaluate_release`` (what ``fedanon evaluate lkc`` runs) on
the pooled table, its release paired in raw order, split by the same per-row rule: the same
trees, so the same error counts, so the figures are equal exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.sweep import numeric_view
from fedanon.leader.kinds.evaluate import EvaluateLeaderJob, run_evaluate
from fedanon.leader.sim import Federation
from fedanon.readers.table_io import read_table
from fedanon.utility.evaluation import evaluate_release
from fedanon.utility.federated_evaluation import held_out_mask
from fedanon.utility.pairing import release_in_raw_order
from tests.distributed.conftest import Dataset, centralized
from tests.harness.cli import run_cli

pytestmark = pytest.mark.slow

FIGURES = ("CE", "BE", "UE", "DR", "cost", "benefit", "n_train", "n_test")


@pytest.fixture(scope="module")
def release_file(hospital_data: Dataset, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The LKC release of the pooled hospital table (the federated LKC release equals it)."""
    path = tmp_path_factory.mktemp("evaluate") / "release.csv"
    centralized(hospital_data, hospital_data.spec(L=2, K=20, C="0.5")).table.to_csv(
        path, index=False
    )
    return path


def pooled_figures(
    dataset: Dataset, release_path: Path, tmp: Path, fraction: float, seed: int
) -> dict[str, Any]:
    """What the centralized protocol reports on the pooled table (read as the parties read
    their parts: a CSV), split by the same per-row rule."""
    csv = tmp / "pooled.csv"
    dataset.table.to_csv(csv, index=False)
    release = read_table(release_path)
    raw = read_table(csv)[list(release.columns)]
    schema = build_schema(dataset.taxonomy, raw, None, None, None)
    assert schema.class_column is not None
    numeric = [t.attribute for t in schema.taxonomies if t.kind == "numeric"]
    paired = release_in_raw_order(raw, release, schema.taxonomies, "release")
    columns = [*(c for c in raw.columns if c != schema.class_column), schema.class_column]
    test = held_out_mask(raw, columns, seed, fraction)
    rawn = numeric_view(raw, numeric)
    return evaluate_release(
        rawn[~test],
        rawn[test],
        paired[~test],
        paired[test],
        schema.class_column,
        schema.qids,
        numeric,
    )


def _job(fed: Federation, dataset: Dataset, release: Path, out: Path, **options: Any) -> Any:
    return EvaluateLeaderJob(
        parties=fed.hops,
        tls=fed.leader_tls,
        release=read_table(release),
        taxonomy=dataset.taxonomy,
        out=out,
        **options,
    )


@pytest.mark.parametrize(("sum_mode", "fraction", "seed"), [("ring", 0.3, 1), ("pairwise", 0.5, 7)])
def test_federated_figures_equal_the_pooled_protocol(
    hospital_federation: Federation,
    hospital_data: Dataset,
    release_file: Path,
    tmp_path: Path,
    sum_mode: str,
    fraction: float,
    seed: int,
) -> None:
    out = tmp_path / "figures.json"
    job = _job(
        hospital_federation,
        hospital_data,
        release_file,
        out,
        test_fraction=fraction,
        seed=seed,
        sum_mode=sum_mode,
    )
    report = run_evaluate(job)
    expected = pooled_figures(hospital_data, release_file, tmp_path, fraction, seed)
    assert {k: report[k] for k in FIGURES} == expected
    assert json.loads(out.read_text("utf-8")) == expected
    assert 0 < expected["n_test"] < len(hospital_data.table)
    assert expected["BE"] != expected["UE"]  # three different trees were tested


def test_a_release_of_other_tables_is_refused_with_no_output(
    hospital_federation: Federation, hospital_data: Dataset, release_file: Path, tmp_path: Path
) -> None:
    release = read_table(release_file)
    other = tmp_path / "other.csv"
    release.iloc[: len(release) // 2].to_csv(other, index=False)  # half the rows are not in it
    out = tmp_path / "figures.json"
    with pytest.raises(Exception, match="not in the release"):
        run_evaluate(_job(hospital_federation, hospital_data, other, out))
    assert not out.exists()


def test_leader_run_with_an_evaluate_section(
    hospital_federation: Federation, hospital_data: Dataset, release_file: Path, tmp_path: Path
) -> None:
    fed = hospital_federation
    tls = fed.leader_tls
    assert tls is not None
    out = tmp_path / "figures.json"
    lines = [
        f'out = "{out}"',
        f'taxonomy = "{hospital_data.taxonomy_path}"',
        "[evaluate]",
        f'release = "{release_file}"',
        "test_fraction = 0.25",
        "seed = 3",
        *(
            line
            for hop in fed.hops
            for line in ("[[parties]]", f'name = "{hop.name}"', f'address = "{hop.address}"')
        ),
        "[tls]",
        f'ca = "{tls.ca}"',
        f'cert = "{tls.cert}"',
        f'key = "{tls.key}"',
    ]
    job = tmp_path / "job.toml"
    job.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("leader", "run", "--config", job, "--quiet")
    assert result.code == 0, result.err
    expected = pooled_figures(hospital_data, release_file, tmp_path, 0.25, 3)
    assert json.loads(out.read_text("utf-8")) == expected


def test_the_split_is_the_pooled_split_whatever_the_partition(hospital_data: Dataset) -> None:
    table = hospital_data.table
    columns = list(table.columns)
    pooled = held_out_mask(table, columns, 5, 0.4)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(table))
    parts = np.array_split(order, 3)
    for part in parts:
        assert (held_out_mask(table.iloc[part], columns, 5, 0.4) == pooled[part]).all()
    assert 0.35 < pooled.mean() < 0.45
    assert (held_out_mask(table, columns, 6, 0.4) != pooled).any()  # the seed matters


def test_sim_evaluate_equals_the_centralized_protocol(
    hospital_data: Dataset, release_file: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data.csv"
    hospital_data.table.to_csv(data, index=False)
    report = tmp_path / "report.json"
    common: list[str | Path] = ["--data", data, "--release", release_file]
    common += ["--taxonomy", hospital_data.taxonomy_path, "--quiet"]
    result = run_cli(
        "sim", "evaluate", *common, "--test-fraction", "0.4", "--seed", "9", "--report", report,
    )  # fmt: skip
    assert result.code == 0, result.err
    written = json.loads(report.read_text("utf-8"))
    assert written["sum_mode"] == "pairwise"  # no --sum-mode: the kind's default
    expected = pooled_figures(hospital_data, release_file, tmp_path, 0.4, 9)
    assert {k: written[k] for k in FIGURES} == expected
    assert written["equals_centralized"] is True

    other = tmp_path / "other.csv"
    read_table(release_file).iloc[:-5].to_csv(other, index=False)
    bad = tmp_path / "bad.json"
    refused = run_cli("sim", "evaluate", *common[:3], other, *common[4:], "--report", bad)
    assert refused.code != 0
    assert len(refused.err.strip().splitlines()) == 1, refused.err
    assert "other.csv" in refused.err and "Traceback" not in refused.err
    assert not bad.exists()


def test_simulate_evaluation_from_python(hospital_data: Dataset, release_file: Path) -> None:
    from fedanon.leader.simulate_evaluation import simulate_evaluation

    table = hospital_data.table.head(900)
    dataset = Dataset(table, hospital_data.taxonomy_path, hospital_data.taxonomy)
    release = centralized(dataset, dataset.spec(L=2, K=20, C="0.5")).table
    report = simulate_evaluation(
        table, release, taxonomy=hospital_data.taxonomy_path, parties=3, seed=4
    )
    assert report["equals_centralized"] is True
    assert report["n_train"] + report["n_test"] == 900
    assert report["parties"] == ["hospital-1", "hospital-2", "hospital-3"]
    assert report["sum_mode"] == "pairwise"  # no sum_mode given: the kind's default
