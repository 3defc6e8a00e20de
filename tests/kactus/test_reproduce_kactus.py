"""Reproduction of the kACTUS paper's Table 2 (C4.5, all attributes QID), with tolerances.

Tolerance from the issue: 1.5 accuracy points. Cells outside it are documented as deviations
with their numbers in docs/reproduction.md (section kACTUS): on Adult the paper's group means
become fingerprints of the groups, and Weka's J48 trained on the same releases collapses on the
same folds as our C4.5 (docs/kactus.md), so the Adult kACTUS cells are not met and Mondrian is
not below kACTUS. The CI tests run the cells that take seconds (Nursery, German) and one Adult
fold that pins the documented deviation and its cause: under the paper's Fig. 6 rule (group
mean) the fold collapses; under fedanon's default release (group median) it does not; under the
paper's experimental reading (tested values kept original, an evaluation protocol that is not
k-anonymous) it meets the paper's cell. The whole grid (Adult with Mondrian and TDS at eight
values of k) takes tens of minutes and is marked ``reproduce``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fedanon.algorithms.kactus.api import anonymize_kactus, kactus_protocol_table
from fedanon.algorithms.mondrian.api import anonymize_mondrian
from fedanon.experiments.classification import (
    Prepared,
    evaluate_classification,
    five_by_two_folds,
    fold_accuracy,
    numeric_columns,
)
from fedanon.experiments.k_anonymizers import anonymizers
from fedanon.models.k_anonymity import check_k_anonymity
from fedanon.utility.benchmark_tables import has_table, load_table

pytestmark = pytest.mark.slow

TOLERANCE = 1.5


def _accuracy(report: dict, method: str, k: int) -> float:
    [row] = [r for r in report["results"] if r["method"] == method and r["k"] == k]
    return row["accuracy_mean"]


@pytest.mark.skipif(not has_table("nursery"), reason="needs the shared UCI data")
def test_nursery_table2_cells_within_tolerance():
    report = evaluate_classification(
        load_table("nursery"), class_column="class", methods=["kactus"], k_values=[5, 30]
    )
    for method, k, paper in (("original", 1, 95.84), ("kactus", 5, 93.61), ("kactus", 30, 90.55)):
        assert abs(_accuracy(report, method, k) - paper) <= TOLERANCE, (method, k)


@pytest.mark.skipif(not has_table("german"), reason="needs the shared UCI data")
def test_german_table2_cells_within_tolerance_at_k5():
    report = evaluate_classification(
        load_table("german"), class_column="class", methods=["kactus"], k_values=[5]
    )
    assert abs(_accuracy(report, "original", 1) - 71.67) <= TOLERANCE
    assert abs(_accuracy(report, "kactus", 5) - 69.98) <= TOLERANCE


@pytest.mark.skipif(not has_table("adult"), reason="needs the shared Adult data")
@pytest.mark.parametrize("k", [5, 50, 1000])
def test_adult_releases_are_k_anonymous_and_lose_fewer_than_k(k):
    adult = load_table("adult")
    qids = [c for c in adult.columns if c != "class"]
    for release in (
        anonymize_kactus(adult, class_column="class", k=k, seed=k),
        anonymize_mondrian(adult, class_column="class", k=k, seed=k),
    ):
        assert check_k_anonymity(release.table, qids, k).ok
        assert len(adult) - len(release.table) < k
        released = release.table["class"].value_counts()
        raw = adult["class"].value_counts()
        assert all(released.get(c, 0) <= n for c, n in raw.items())


@pytest.mark.skipif(not has_table("adult"), reason="needs the shared Adult data")
def test_adult_k50_group_mean_collapses_the_median_release_and_the_protocol_do_not():
    """The documented Adult deviation, pinned on fold 4 of the protocol (seed 1), k = 50.

    The paper reports 84.89 % for this cell; our C4.5 scores 26.4 % on this fold, and Weka's
    J48 on the same release 24.7 % (bench/kactus_j48_crosscheck.py). The release is complete
    (no record dropped, class counts of the training half unchanged); the collapse comes from
    capital-gain: the tree tests it at the root, so every released record carries its group's
    mean, which is 0 only in the few groups of people with a capital loss (Adult never has
    both), mostly >50K, while 92 % of raw test records have no capital gain.
    """
    adult = load_table("adult")
    numeric = numeric_columns(adult, exclude=["class"])
    train_rows, test_rows = five_by_two_folds(adult["class"], 1)[3]
    train, test = adult.iloc[train_rows], adult.iloc[test_rows]
    release = anonymize_kactus(train, class_column="class", k=50, seed=1003, numeric="mean").table

    assert release["class"].value_counts().to_dict() == train["class"].value_counts().to_dict()
    gain = pd.to_numeric(release["capital-gain"], errors="coerce")  # never suppressed here
    loss = pd.to_numeric(release["capital-loss"], errors="coerce")  # NaN where suppressed
    zero = gain == 0
    assert zero.mean() < 0.05 and (loss[zero] > 0).all()
    assert (release["class"][zero] == ">50K").mean() > 0.8
    assert (test["capital-gain"].astype(float) == 0).mean() > 0.9

    raw = fold_accuracy(Prepared(train, test, numeric, marker=None), "class", "c45", 4)
    anonymized = fold_accuracy(Prepared(release, test, numeric), "class", "c45", 4)
    assert abs(100 * raw - 85.96) <= TOLERANCE
    assert 100 * anonymized < 84.89 - 50  # the deviation as documented: 26.4 %, not 84.89 %
    assert abs(anonymized - (test["class"] == ">50K").mean()) < 0.03  # all said >50K

    # fedanon's default release, the group median, is k-anonymous and does not collapse.
    median = anonymize_kactus(train, class_column="class", k=50, seed=1003).table
    qids = [c for c in adult.columns if c != "class"]
    assert check_k_anonymity(median, qids, 50).ok
    by_median = fold_accuracy(Prepared(median, test, numeric), "class", "c45", 4)
    assert 100 * by_median > 80

    # The paper's experimental reading: the same groups with every tested QID at its original
    # value give the paper's cell; that table is no longer k-anonymous (a protocol, no release).
    unaveraged = kactus_protocol_table(train, class_column="class", k=50, seed=1003)
    assert not check_k_anonymity(unaveraged, qids, 50).ok
    kept = fold_accuracy(Prepared(unaveraged, test, numeric), "class", "c45", 4)
    assert abs(100 * kept - 84.89) <= TOLERANCE


@pytest.mark.skipif(not has_table("pima"), reason="needs the shared UCI data")
def test_bench_inequality_raw_mode_evaluates_the_protocol(tmp_path):
    """`--inequality-raw` failed with "the release fails 5-anonymity" once every release was
    checked: the protocol's table is evaluated, never released, so the mode must run."""
    script = Path(__file__).resolve().parents[2] / "bench" / "reproduce_kactus.py"
    out = tmp_path / "pima.json"
    done = subprocess.run(
        [sys.executable, str(script), "--tables", "pima", "--ks", "5", "--inequality-raw",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    [row] = [r for r in json.loads(out.read_text())["pima"]["results"] if r["k"] == 5 and
             r["method"] == "kactus"]  # fmt: skip
    # The paper's Pima k = 5 cell, 75.20; our raw-data cell is itself 2.4 below the paper's.
    assert abs(row["accuracy_mean"] - 75.20) <= 3.0


@pytest.mark.reproduce
@pytest.mark.skipif(not has_table("adult"), reason="needs the shared Adult data")
def test_adult_unaveraged_diagnostic_meets_the_paper_from_k5_to_k100():
    """The whole diagnostic column of docs/reproduction.md (3-10 minutes): kACTUS's groups
    with every tested QID kept raw meet the paper's Adult 14/14 cells within tolerance at
    k = 5 to 100 and stay above Mondrian's paper cells; at k = 500 and 1000 they stay above the
    paper's kACTUS cells (by 1.9 and 3.8 points, documented)."""

    def unaveraged(train, test, k, seed, numeric):
        table = kactus_protocol_table(train, class_column="class", k=k, seed=seed)
        return Prepared(table, test, numeric)

    ks = [5, 10, 20, 30, 50, 100, 500, 1000]
    report = evaluate_classification(
        load_table("adult"), class_column="class", methods={"kactus": unaveraged}, k_values=ks
    )
    paper = {5: 85.88, 10: 85.73, 20: 85.48, 30: 85.32, 50: 84.89, 100: 84.25}
    for k, cell in paper.items():
        assert abs(_accuracy(report, "kactus", k) - cell) <= TOLERANCE, k
    mondrian_paper = {5: 82.17, 20: 82.15, 50: 81.31, 100: 81.11, 500: 75.18, 1000: 75.21}
    for k, cell in mondrian_paper.items():
        assert _accuracy(report, "kactus", k) > cell, k
    assert _accuracy(report, "kactus", 500) > 82.43 + TOLERANCE
    assert _accuracy(report, "kactus", 1000) > 79.27 + TOLERANCE


@pytest.mark.reproduce
@pytest.mark.skipif(not has_table("adult"), reason="needs the shared Adult data")
def test_adult_full_grid_cells_that_reproduce():
    """The whole Adult 14/14 grid (3 to 15 minutes on the shared 2-core machine). The cells
    asserted are those within tolerance; the kACTUS cells deviate (docs/reproduction.md)."""
    from fedanon.readers.datadir import data_dir

    taxonomy = data_dir() / "adult" / "lkc_paper_taxonomy.hchy"
    methods = anonymizers(["kactus", "mondrian", "tds"], "class", taxonomy=taxonomy)
    ks = [5, 10, 20, 30, 50, 100, 500, 1000]
    report = evaluate_classification(
        load_table("adult"), class_column="class", methods=methods, k_values=ks
    )
    assert abs(_accuracy(report, "original", 1) - 85.96) <= TOLERANCE
    assert abs(_accuracy(report, "mondrian", 5) - 82.17) <= TOLERANCE
    assert abs(_accuracy(report, "mondrian", 500) - 75.18) <= TOLERANCE
    released = [r for r in report["results"] if "released_mean" in r]
    assert all(r["released_mean"] >= 22_611 - (r["k"] - 1) for r in released)
