"""The overall F-measure (Eq. 6.3-6.6) on clusterings small enough to check by hand."""

from __future__ import annotations

import numpy as np
import pytest

from fedanon.algorithms.drbt.fmeasure import membership_matrix, overall_f_measure


def test_identical_partitions_score_one_whatever_the_labels() -> None:
    reference = np.array([0, 0, 1, 1, 2, 2, 2])
    assert overall_f_measure(reference, reference) == 1.0
    assert overall_f_measure(reference, np.array([5, 5, 9, 9, 1, 1, 1])) == 1.0


def test_overall_f_measure_by_hand() -> None:
    reference = np.array([0, 0, 0, 0, 1, 1])
    produced = np.array([0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(membership_matrix(reference, produced), [[3, 1], [0, 2]])
    # c_0 (4 objects): best with c'_0, P = 3/3, R = 3/4 -> F = 6/7.
    # c_1 (2 objects): best with c'_1, P = 2/3, R = 2/2 -> F = 4/5.
    assert overall_f_measure(reference, produced) == pytest.approx((4 * 6 / 7 + 2 * 4 / 5) / 6)


def test_one_produced_cluster_against_two() -> None:
    # Each reference cluster: P = 2/4, R = 2/2 -> F = 2/3.
    assert overall_f_measure(np.array([0, 0, 1, 1]), np.zeros(4)) == pytest.approx(2 / 3)


def test_matches_the_precision_recall_definition() -> None:
    rng = np.random.default_rng(0)
    reference = rng.integers(4, size=300)
    produced = rng.integers(3, size=300)
    freq = membership_matrix(reference, produced).astype(float)
    expected = 0.0
    for row in freq:
        best = 0.0
        for j, f in enumerate(row):
            if f:
                p, r = f / freq[:, j].sum(), f / row.sum()
                best = max(best, 2 * p * r / (p + r))
        expected += row.sum() * best
    assert overall_f_measure(reference, produced) == pytest.approx(expected / 300)


def test_direction_matters() -> None:
    # OF weights by the reference clusters: splitting a reference cluster costs differently
    # from merging two of them.
    a = np.array([0, 0, 0, 0, 0, 0, 1, 1])
    b = np.array([0, 0, 0, 1, 1, 1, 1, 1])
    assert overall_f_measure(a, b) != pytest.approx(overall_f_measure(b, a))


def test_rejects_mismatched_labels() -> None:
    with pytest.raises(ValueError, match="equal length"):
        overall_f_measure(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="empty"):
        overall_f_measure(np.zeros(0), np.zeros(0))
