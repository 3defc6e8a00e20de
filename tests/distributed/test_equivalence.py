"""The distributed release equals the centralized one (docs/distributed.md).

Equality is checked as a multiset of rows plus the final cut and the sequence of
specializations, so a distributed run that reached the same cut by other choices, or that lost
or duplicated records in the union, fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedanon.crypto.parallel import Parallelism
from fedanon.leader.sim import Federation, federation, split_table
from tests.distributed.conftest import (
    HOSPITAL_QIDS,
    Dataset,
    adult_dataset,
    assert_same_release,
    centralized,
    hospital_dataset,
    read_release,
    requires_adult,
    run_distributed,
    run_matches_centralized,
    status,
)


# ------------------------------------------------------------------------------- quick subset
def test_synthetic_three_parties_equal_centralized(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """Ring mode, 3 real daemons over mutual TLS: same rows, same cut, same choices."""
    spec = hospital_data.spec(L=3, K=20, C="0.2")
    report = run_matches_centralized(hospital_federation, hospital_data, spec, tmp_path / "r.csv")
    assert report["specializations"] >= 5, "too few iterations to exercise the loop"
    # One secure sum for the start plus one per specialization.
    assert report["iterations"] == report["specializations"] + 1
    assert report["privacy_check"]["ok"]


def test_pairwise_mode_equals_centralized(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """The collusion-resistant sum mode changes who sees what, not the result."""
    spec = hospital_data.spec(L=2, K=30, C="0.2", score="discernibility")
    out = tmp_path / "release.csv"
    report = run_matches_centralized(
        hospital_federation, hospital_data, spec, out, sum_mode="pairwise"
    )
    assert report["sum_mode"] == "pairwise"


def test_leader_opening_the_union_in_worker_processes_changes_nothing(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """The leader, a process with live gRPC threads, opens the union in a (forced) pool."""
    spec = hospital_data.spec(L=2, K=25, C="0.2")
    pooled = Parallelism(workers=2, min_records=1)
    out = tmp_path / "release.csv"
    run_matches_centralized(hospital_federation, hospital_data, spec, out, union_parallelism=pooled)


@pytest.mark.parametrize(
    ("mode", "score"), [("root", "infogain"), ("drop", "infogain"), ("root", "discernibility")]
)
def test_suppression_budget_equals_centralized(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path, mode: str, score: str
) -> None:
    """A record-suppression budget: same suppressed records, same release, checker green (each
    score has its own candidate order under a budget: free-first, per-record)."""
    spec = hospital_data.spec(
        L=None,
        K=10,
        C=None,
        preset="k-anonymity",
        qids=["age", "sex", "postcode", "employment"],
        suppress="0.05",
        suppressed=mode,
        score=score,
    )
    out = tmp_path / "release.csv"
    report = run_distributed(
        hospital_federation.hops, hospital_federation.leader_tls, hospital_data, spec, out
    )
    reference = centralized(hospital_data, spec)
    assert_same_release(out, report, reference)
    assert report["suppression"] == reference.report["suppression"]
    suppressed = report["suppression"]["suppressed_records"]
    assert 0 < suppressed <= report["suppression"]["budget_records"]
    released = len(read_release(out))
    assert released == report["records"] - (suppressed if mode == "drop" else 0)
    assert report["privacy_check"]["ok"]


# ----------------------------------------------------------------- one federation, many jobs
@st.composite
def hospital_jobs(draw: st.DrawFn) -> dict:
    """Random LKC jobs over the hospital schema: QID subset, L, K, C, score, sensitive set."""
    qids = draw(st.lists(st.sampled_from(HOSPITAL_QIDS), min_size=2, max_size=8, unique=True))
    return {
        "qids": qids,
        "L": draw(st.integers(1, min(4, len(qids)))),
        "K": draw(st.integers(2, 60)),
        "C": draw(st.sampled_from(["0.1", "0.2", "1/3", "0.5", "1"])),
        "score": draw(st.sampled_from(["infogain", "discernibility"])),
        "sensitive": draw(
            st.sampled_from([{"diagnosis": ["HIV"]}, {"diagnosis": ["HIV", "Schizophrenia"]}])
        ),
        "sum_mode": draw(st.sampled_from(["ring", "pairwise"])),
    }


@pytest.mark.slow
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(job=hospital_jobs())
def test_one_federation_serves_session_after_session(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path, job: dict
) -> None:
    """Daemons serve any number of sessions; each equals its centralized run."""
    served = [status(hospital_federation, i).sessions_served for i in range(3)]
    sum_mode = job.pop("sum_mode")
    spec = hospital_data.spec(**job)
    out = tmp_path / f"release-{abs(hash(repr(job)))}.csv"
    run_matches_centralized(hospital_federation, hospital_data, spec, out, sum_mode=sum_mode)
    for i in range(3):
        after = status(hospital_federation, i)
        assert after.sessions_served == served[i] + 1
        assert after.session_id == "", "the party kept the session open after End"


# ---------------------------------------------------------------- random tables, new daemons
@pytest.mark.slow
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_rows=st.integers(300, 1500),
    seed=st.integers(0, 2**31 - 1),
    n_parties=st.integers(3, 5),
    weights=st.lists(st.integers(1, 10), min_size=5, max_size=5),
    L=st.integers(1, 4),
    K=st.integers(2, 40),
    C=st.sampled_from(["0.1", "0.25", "0.5", "1"]),
)
def test_random_synthetic_tables_equal_centralized(
    n_rows: int, seed: int, n_parties: int, weights: list[int], L: int, K: int, C: str
) -> None:
    """Random tables, uneven random splits over 3-5 fresh daemons, random parameters."""
    dataset = hospital_dataset(n_rows, seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_rows)
    shares = np.array(weights[:n_parties], dtype=float)
    cuts = np.floor(np.cumsum(shares / shares.sum())[:-1] * n_rows).astype(int)
    parts = [
        dataset.table.iloc[np.sort(idx)].reset_index(drop=True) for idx in np.split(order, cuts)
    ]
    assert sum(len(p) for p in parts) == n_rows
    spec = dataset.spec(L=L, K=K, C=C)
    reference = centralized(dataset, spec)
    with federation(parts, dataset.taxonomy_path) as fed:
        out = fed.workdir / "release.csv"
        report = run_distributed(fed.hops, fed.leader_tls, dataset, spec, out)
        assert_same_release(out, report, reference)


@pytest.mark.slow
def test_party_with_no_records_joins(hospital_data: Dataset, tmp_path: Path) -> None:
    """A hospital with an empty table is a valid member: the result is unchanged."""
    dataset = hospital_data.head(900)
    table = dataset.table
    parts = [*split_table(table, 2, "random", seed=3), table.iloc[:0]]
    spec = dataset.spec(L=2, K=15, C="0.25")
    with federation(parts, dataset.taxonomy_path, workdir=tmp_path / "fed") as fed:
        out = tmp_path / "release.csv"
        report = run_distributed(fed.hops, fed.leader_tls, dataset, spec, out)
    assert_same_release(out, report, centralized(dataset, spec))


@pytest.mark.slow
def test_daemons_sealing_in_worker_processes_changes_nothing(
    hospital_data: Dataset, tmp_path: Path
) -> None:
    """Every daemon seals its records in a (forced) pool, configured through party.toml."""
    pooled = Parallelism(workers=2, min_records=1)
    parts = split_table(hospital_data.table, 3, "random", seed=2)
    spec = hospital_data.spec(L=3, K=20, C="0.2")
    with federation(
        parts, hospital_data.taxonomy_path, workdir=tmp_path / "fed", union=pooled
    ) as fed:
        out = tmp_path / "release.csv"
        report = run_distributed(
            fed.hops, fed.leader_tls, hospital_data, spec, out, union_parallelism=pooled
        )
    assert_same_release(out, report, centralized(hospital_data, spec))


# ---------------------------------------------------------------------- Adult, paper setting
@pytest.fixture(scope="module", params=[3, 5], ids=lambda n: f"{n}parties")
def adult_federation(request: pytest.FixtureRequest) -> Iterator[tuple[Federation, Dataset]]:
    """Adult split at random over 3 or 5 daemons; every (L, K) session runs on it."""
    dataset = adult_dataset()
    parts = split_table(dataset.table, request.param, "random", seed=request.param)
    with federation(parts, dataset.taxonomy_path) as fed:
        yield fed, dataset


@requires_adult
@pytest.mark.slow
@pytest.mark.parametrize(("L", "K"), [(2, 20), (2, 100), (4, 20), (4, 100)])
def test_adult_paper_setting_equals_centralized(
    adult_federation: tuple[Federation, Dataset], L: int, K: int, tmp_path: Path
) -> None:
    """Adult, 13 QIDs, sensitive Divorced/Separated, class `class`, C = 0.2."""
    fed, dataset = adult_federation
    spec = dataset.spec(L=L, K=K, C="0.2")
    assert len(spec.qids) == 13
    assert spec.class_column == "class"
    assert {s.column for s in spec.sensitive} == {"martial-status"}
    out = tmp_path / "release.csv"
    report = run_distributed(fed.hops, fed.leader_tls, dataset, spec, out)
    assert report["parties"] == [d.name for d in fed.daemons]
    assert_same_release(out, report, centralized(dataset, spec))
