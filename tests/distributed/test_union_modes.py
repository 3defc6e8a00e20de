"""The shuffle union mode over real daemons: same release as centralized, job.toml and CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedanon.errors import FedanonError
from fedanon.federation.config import Hop
from fedanon.leader.config import load_job
from fedanon.leader.kinds.lkc import LKCLeaderJob
from fedanon.leader.sim import Federation, federation, split_table
from tests.config.configs import job_doc, make_material, toml_text
from tests.distributed.conftest import (
    Dataset,
    adult_dataset,
    assert_same_release,
    centralized,
    make_job,
    requires_adult,
    run_distributed,
    run_matches_centralized,
)


def test_shuffle_mode_equals_centralized(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """Three daemons over mutual TLS, no padding: the block sizes are the record counts."""
    spec = hospital_data.spec(L=3, K=20, C="0.2")
    out = tmp_path / "release.csv"
    report = run_matches_centralized(
        hospital_federation, hospital_data, spec, out, union_mode="shuffle"
    )
    assert report["union_mode"] == "shuffle"


def test_shuffle_mode_with_padding_and_pairwise_sums_equals_centralized(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    spec = hospital_data.spec(L=2, K=30, C="0.2")
    options = {"union_mode": "shuffle", "union_pad_to": 900, "sum_mode": "pairwise"}
    run_matches_centralized(hospital_federation, hospital_data, spec, tmp_path / "r.csv", **options)


def test_the_same_daemons_serve_a_layered_job_after_a_shuffle_job(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    spec = hospital_data.spec(L=2, K=25, C="0.2")
    for mode in ("shuffle", "layered"):
        out = tmp_path / f"{mode}.csv"
        report = run_matches_centralized(
            hospital_federation, hospital_data, spec, out, union_mode=mode
        )
        assert report["union_mode"] == mode


def test_a_pad_to_below_a_party_count_fails_in_one_line(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    spec = hospital_data.spec(L=2, K=25, C="0.2")
    out = tmp_path / "release.csv"
    with pytest.raises(FedanonError, match="pad_to") as failure:
        run_distributed(
            hospital_federation.hops,
            hospital_federation.leader_tls,
            hospital_data,
            spec,
            out,
            union_mode="shuffle",
            union_pad_to=10,
        )
    assert "\n" not in str(failure.value)
    assert not out.exists()


def test_shuffle_mode_needs_three_parties(hospital_data: Dataset, tmp_path: Path) -> None:
    """With two parties each would know every permutation: refused before any call."""
    spec = hospital_data.spec(L=2, K=25, C="0.2")
    two = [Hop("a", "127.0.0.1:1"), Hop("b", "127.0.0.1:2")]
    job = make_job(
        two,
        None,
        hospital_data,
        spec,
        tmp_path / "x.csv",
        union_mode="shuffle",
        allow_two_parties=True,
    )
    with pytest.raises(FedanonError, match="three parties"):
        job.check()


@pytest.mark.parametrize("mode", ["layered", "shuffle"])
def test_job_toml_selects_the_union_mode(tmp_path: Path, mode: str) -> None:
    doc = job_doc(make_material(tmp_path / "material"), tmp_path)
    default = tmp_path / "default.toml"
    default.write_text(toml_text(doc), encoding="utf-8")
    loaded = load_job(default)
    assert isinstance(loaded, LKCLeaderJob) and loaded.union_mode == "layered"
    doc["union"]["mode"] = mode
    chosen = tmp_path / "job.toml"
    chosen.write_text(toml_text(doc), encoding="utf-8")
    loaded = load_job(chosen)
    assert isinstance(loaded, LKCLeaderJob) and loaded.union_mode == mode


@pytest.mark.slow
def test_five_parties_uneven_shuffle_mode_equals_centralized(
    hospital_data: Dataset, tmp_path: Path
) -> None:
    """Five steps, pairs (P4, P0) last; one party with no records (an empty block)."""
    dataset = hospital_data.head(1500)
    table = dataset.table
    parts = [*split_table(table, 4, "random", seed=7), table.iloc[:0]]
    spec = dataset.spec(L=2, K=15, C="0.25")
    with federation(parts, dataset.taxonomy_path, workdir=tmp_path / "fed") as fed:
        out = tmp_path / "release.csv"
        report = run_distributed(fed.hops, fed.leader_tls, dataset, spec, out, union_mode="shuffle")
    assert_same_release(out, report, centralized(dataset, spec))


@requires_adult
@pytest.mark.slow
def test_adult_three_parties_shuffle_mode_equals_centralized(tmp_path: Path) -> None:
    dataset = adult_dataset()
    spec = dataset.spec(L=4, K=20, C="0.2")
    parts = split_table(dataset.table, 3, "random", seed=3)
    with federation(parts, dataset.taxonomy_path) as fed:
        out = tmp_path / "release.csv"
        report = run_distributed(fed.hops, fed.leader_tls, dataset, spec, out, union_mode="shuffle")
    assert_same_release(out, report, centralized(dataset, spec))
