"""Where a published single-release figure falls among many releases of ours."""

from __future__ import annotations

import pytest

from fedanon.algorithms.drbt.protocol import Summary
from fedanon.algorithms.drbt.reproduce import ReleaseDistribution


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
    # numpy's linear percentile over 5 points: 0.5 + 0.025 * 4 * 0.1, 0.9 - the same.
    assert (low, high) == (pytest.approx(0.51), pytest.approx(0.89))
    assert dist.share_within(2, 0.65, 0.06) == pytest.approx(0.4)  # 0.6 and 0.7
    assert dist.share_within(2, 0.62, 0.05) == pytest.approx(0.2)  # 0.6 only
    assert dist.median_std(2) == pytest.approx(0.1 / 2**0.5)
