"""RA and enhanced RA on tables: what changes, what does not, seeds, and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.randomization.api import anonymize_randomize
from fedanon.algorithms.randomization.sampler import chosen_enhanced, chosen_ra, draw
from fedanon.errors import FedanonError
from tests.randomization.tables import correlated_table

QIDS = ["a", "b", "c", "d"]


def test_ra_changes_only_qids_and_keeps_rows_in_place():
    table = correlated_table()
    out = anonymize_randomize(table, qids=QIDS, seed=1).table
    assert list(out.columns) == list(table.columns)
    pd.testing.assert_series_equal(out["id"], table["id"])
    pd.testing.assert_series_equal(out["disease"], table["disease"])
    changed = (out[QIDS].to_numpy() != table[QIDS].to_numpy()).sum(axis=1)
    assert changed.max() == 1  # RA redraws one attribute per record
    assert changed.sum() > 0
    for q in QIDS:
        assert set(out[q]) <= set(table[q])


def test_enhanced_changes_at_most_k_cells_per_record():
    table = correlated_table()
    out = anonymize_randomize(table, qids=QIDS, method="enhanced", attrs=3, seed=1).table
    changed = (out[QIDS].to_numpy() != table[QIDS].to_numpy()).sum(axis=1)
    assert changed.max() == 3
    assert (changed == 3).any()


def test_selection_masks():
    rng = np.random.default_rng(0)
    mask = chosen_ra(100_000, np.array([0.5, 0.3, 0.2, 0.0]), rng)
    assert (mask.sum(axis=1) == 1).all()
    assert mask.mean(axis=0) == pytest.approx([0.5, 0.3, 0.2, 0.0], abs=0.006)
    mask = chosen_enhanced(100_000, 5, 2, rng)
    assert (mask.sum(axis=1) == 2).all()
    assert mask.mean(axis=0) == pytest.approx([0.4] * 5, abs=0.006)
    pairs = mask[:, 0] & mask[:, 1]  # each of the C(5,2) = 10 pairs w.p. 1/10
    assert pairs.mean() == pytest.approx(0.1, abs=0.004)


def test_draw_follows_the_counts():
    values = draw(np.array([0, 3, 1, 0, 6]), 200_000, np.random.default_rng(5))
    assert np.bincount(values, minlength=5) / 200_000 == pytest.approx(
        [0, 0.3, 0.1, 0, 0.6], abs=0.004
    )


def test_seed_reproduces_and_no_seed_does_not():
    table = correlated_table()
    one = anonymize_randomize(table, qids=QIDS, seed=7).table
    two = anonymize_randomize(table, qids=QIDS, seed=7).table
    pd.testing.assert_frame_equal(one, two)
    free = [anonymize_randomize(table, qids=QIDS).table for _ in range(2)]
    assert not free[0].equals(free[1])
    assert anonymize_randomize(table, qids=QIDS).report["seeded"] is False


def test_report_fields():
    report = anonymize_randomize(correlated_table(), qids=QIDS, p="optimal", seed=2).report
    assert report["method"] == "ra" and report["records"] == 2000
    assert sum(report["p"]) == pytest.approx(1, abs=1e-5)
    assert report["changed_cells"] == round(report["changed_cell_fraction"] * 8000)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"qids": ["a", "constant"]}, "QID column 'constant' has only one value"),
        ({"p": [0.5, 0.2, 0.2, 0.2]}, "sum to 1.1, not 1"),
        ({"p": [0.5, 0.5]}, "2 attribute probabilities for 4 QID columns"),
        ({"method": "enhanced", "attrs": 5}, "between 1 and the number of QIDs (4), got 5"),
        ({"method": "enhanced", "attrs": 0}, "got 0"),
        ({"method": "enhanced", "p": "optimal"}, "--p applies to --method ra only"),
        ({"attrs": 2}, "--attrs applies to --method enhanced only"),
        ({"qids": ["a", "nope"]}, "no QID column 'nope'"),
        ({"method": "shuffle"}, "method 'shuffle' unknown"),
        ({"p": "best"}, "p 'best' unknown"),
    ],
)
def test_bad_input_is_one_line_error(kwargs, message):
    table = correlated_table(200)
    table["constant"] = "x"
    args = {"qids": QIDS, **kwargs}
    with pytest.raises(FedanonError) as caught:
        anonymize_randomize(table, **args)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
