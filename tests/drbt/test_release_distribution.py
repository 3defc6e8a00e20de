"""Where a published single-release figure falls among many releases of ours."""

from __future__ import annotations

import pytest

from fedanon.algorithms.drbt.protocol import Summary
from fedanon.experiments.drbt.reproduce import (
    ReleaseDistribution,
    chance_at_least,
    issue_counts,
    verdicts,
)


def _distribution() -> ReleaseDistribution:
    # Five releases whose 10-trial means are 0.5, 0.6, 0.7, 0.8, 0.9 (two trials each here).
    releases = tuple(Summary((m - 0.05, m + 0.05)) for m in (0.5, 0.6, 0.7, 0.8, 0.9))
    return ReleaseDistribution({2: releases})


def test_rank_counts_releases_below_with_ties_as_half() -> None:
    dist = _distribution()
    assert dist.rank(2, 0.4) == 0.0
    assert dist.rank(2, 0.95) == 1.0
    assert dist.rank(2, 0.75) == pytest.approx(0.6)
    assert dist.rank(2, 0.7) == pytest.approx(0.5)  # 2 below, 1 tie


def test_band_share_and_spread() -> None:
    dist = _distribution()
    low, high = dist.band(2)
    # The issue's 5th-95th percentiles, numpy's linear rule over 5 points: 0.5 + 0.05 * 4 * 0.1.
    assert (low, high) == (pytest.approx(0.52), pytest.approx(0.88))
    assert dist.median(2) == pytest.approx(0.7)
    assert dist.share_between(2, 0.52, 0.88) == pytest.approx(0.6)  # 0.6, 0.7, 0.8
    assert dist.share_within(2, 0.65, 0.06) == pytest.approx(0.4)  # 0.6 and 0.7
    assert dist.share_within(2, 0.62, 0.05) == pytest.approx(0.2)  # 0.6 only
    assert dist.median_std(2) == pytest.approx(0.1 / 2**0.5)


def test_verdicts_judge_each_thesis_point_by_band_and_median() -> None:
    # Iris's thesis points are 1.000, 0.948, 0.858, 0.833 (K = 2..5). Our made-up releases:
    # K = 2 and 3 centred on 0.90, K = 4 on 0.85, K = 5 on 0.70, each spread by +-0.04.
    centres = {2: 0.90, 3: 0.90, 4: 0.85, 5: 0.70}
    dist = ReleaseDistribution(
        {
            k: tuple(Summary((c + d, c + d)) for d in (-0.04, -0.02, 0.0, 0.02, 0.04))
            for k, c in centres.items()
        }
    )
    points = verdicts("iris", dist)
    assert [p.k for p in points] == [2, 3, 4, 5]
    # Bands [c - 0.032, c + 0.032]: only 0.858 (K = 4) lies inside its band.
    assert [p.inside for p in points] == [False, False, True, False]
    # |median - thesis| = 0.100, 0.048, 0.008, 0.133: K = 3 and 4 are within 0.05.
    assert [round(p.gap, 3) for p in points] == [0.1, 0.048, 0.008, 0.133]
    assert [p.near for p in points] == [False, True, True, False]
    assert issue_counts(points) == (1, 2)
    # Three of five releases lie within the band, all five within 0.05 of the median.
    assert [p.inside_chance for p in points] == [pytest.approx(0.6)] * 4
    assert [p.near_chance for p in points] == [1.0] * 4


def test_chance_at_least_is_the_poisson_binomial_tail() -> None:
    assert chance_at_least([0.5, 0.5], 1) == pytest.approx(0.75)
    assert chance_at_least([1.0, 1.0, 0.5], 3) == pytest.approx(0.5)
    assert chance_at_least([0.9] * 16, 14) == pytest.approx(0.7892, abs=1e-4)
    assert chance_at_least([0.3], 0) == pytest.approx(1.0)
