"""Reproduction of the kACTUS paper's Table 2 (C4.5, all attributes QID), with tolerances.

Tolerance from the issue: 1.5 accuracy points. Cells outside it are documented as deviations
with their numbers in docs/reproduction.md (section kACTUS): on the tables with numeric QIDs
the paper's group means become fingerprints of the groups (docs/kactus.md). The CI test runs
the cells that take seconds (Nursery, German); the whole grid (Adult with Mondrian and TDS at
eight values of k) takes tens of minutes and is marked ``reproduce``.
"""

from __future__ import annotations

import pytest

from fedanon.algorithms.kactus.api import anonymize_kactus
from fedanon.algorithms.mondrian.api import anonymize_mondrian
from fedanon.models.k_anonymity import check_k_anonymity
from fedanon.utility.benchmark_tables import has_table, load_table
from fedanon.utility.classification import evaluate_classification
from fedanon.utility.k_anonymizers import anonymizers

pytestmark = pytest.mark.slow

TOLERANCE = 1.5


def _accuracy(report: dict, method: str, k: int) -> float:
    [row] = [r for r in report["results"] if r["method"] == method and r["k"] == k]
    return row["accuracy_mean"]


@pytest.mark.skipif(not has_table("nursery"), reason="needs the shared UCI data")
def test_nursery_table2_cells_within_tolerance():
    report = evaluate_classification(
        load_table("nursery"), "class", anonymizers(["kactus"], "class"), [5, 30], ("c45",), 1
    )
    for method, k, paper in (("original", 1, 95.84), ("kactus", 5, 93.61), ("kactus", 30, 90.55)):
        assert abs(_accuracy(report, method, k) - paper) <= TOLERANCE, (method, k)


@pytest.mark.skipif(not has_table("german"), reason="needs the shared UCI data")
def test_german_table2_cells_within_tolerance_at_k5():
    report = evaluate_classification(
        load_table("german"), "class", anonymizers(["kactus"], "class"), [5], ("c45",), 1
    )
    assert abs(_accuracy(report, "original", 1) - 71.67) <= TOLERANCE
    assert abs(_accuracy(report, "kactus", 5) - 69.98) <= TOLERANCE


@pytest.mark.skipif(not has_table("adult"), reason="needs the shared Adult data")
@pytest.mark.parametrize("k", [5, 50, 1000])
def test_adult_releases_are_k_anonymous_and_lose_fewer_than_k(k):
    adult = load_table("adult")
    qids = [c for c in adult.columns if c != "class"]
    for release in (
        anonymize_kactus(adult, "class", k=k, seed=k),
        anonymize_mondrian(adult, "class", k=k, seed=k),
    ):
        assert check_k_anonymity(release.table, qids, k).ok
        assert len(adult) - len(release.table) < k
        released = release.table["class"].value_counts()
        raw = adult["class"].value_counts()
        assert all(released.get(c, 0) <= n for c, n in raw.items())


@pytest.mark.reproduce
@pytest.mark.skipif(not has_table("adult"), reason="needs the shared Adult data")
def test_adult_full_grid_cells_that_reproduce():
    """The whole Adult 14/14 grid (3 to 15 minutes on the shared 2-core machine). The cells
    asserted are those within tolerance; the kACTUS cells deviate (docs/reproduction.md)."""
    from fedanon.readers.datadir import data_dir

    taxonomy = data_dir() / "adult" / "lkc_paper_taxonomy.hchy"
    methods = anonymizers(["kactus", "mondrian", "tds"], "class", taxonomy=taxonomy)
    ks = [5, 10, 20, 30, 50, 100, 500, 1000]
    report = evaluate_classification(load_table("adult"), "class", methods, ks, ("c45",), 1)
    assert abs(_accuracy(report, "original", 1) - 85.96) <= TOLERANCE
    assert abs(_accuracy(report, "mondrian", 5) - 82.17) <= TOLERANCE
    assert abs(_accuracy(report, "mondrian", 500) - 75.18) <= TOLERANCE
    released = [r for r in report["results"] if "released_mean" in r]
    assert all(r["released_mean"] >= 22_611 - (r["k"] - 1) for r in released)
