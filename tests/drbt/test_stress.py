"""Stress (Eq. 2.9 as the thesis reports it) and its expectation for random projections."""

from __future__ import annotations

import numpy as np
import pytest

from fedanon.algorithms.drbt.projection import project_block
from fedanon.algorithms.drbt.stress import expected_stress, stress


def test_stress_by_hand() -> None:
    original = np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 8.0]])
    # Distances 5, 8, 5 (pairs 12, 13, 23); projected onto the first axis: 3, 0, 3.
    result = stress(original, original[:, :1])
    assert result.value == pytest.approx((4 + 64 + 4) / (25 + 64 + 25))
    assert (result.pairs, result.objects, result.exact) == (3, 3, True)


def test_stress_is_zero_for_an_isometry_and_scales_quadratically() -> None:
    data = np.random.default_rng(0).standard_normal((50, 6))
    rotation, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((6, 6)))
    assert stress(data, data @ rotation).value == pytest.approx(0.0, abs=1e-20)
    # Every distance multiplied by c: sum (c-1)^2 d^2 / sum d^2 = (c-1)^2.
    assert stress(data, 0.7 * data).value == pytest.approx(0.09)


def test_sampled_stress_estimates_the_exact_value() -> None:
    rng = np.random.default_rng(2)
    data = rng.standard_normal((1500, 20))
    projected = project_block(data, 8, "sparse", rng)
    exact = stress(data, projected, max_pairs=10**7)
    samples = [stress(data, projected, rng, max_pairs=20_000) for _ in range(10)]
    assert exact.exact and exact.pairs == 1500 * 1499 // 2
    assert all(not s.exact and s.objects == 200 and s.pairs == 19_900 for s in samples)
    # One sample of 200 objects is off by up to ~13% (measured over 20 seeds); the mean of
    # ten is within 2%, so 5% separates an unbiased estimator from a biased one.
    assert np.mean([s.value for s in samples]) == pytest.approx(exact.value, rel=0.05)
    with pytest.raises(ValueError, match="pass an rng"):
        stress(data, projected, max_pairs=20_000)


@pytest.mark.parametrize("matrix", ["gaussian", "sparse"])
@pytest.mark.parametrize(("d", "k"), [(40, 30), (40, 20), (100, 75), (100, 50)])
def test_stress_matches_its_expectation_on_random_data(matrix: str, d: int, k: int) -> None:
    # Mean of 5 projections (the thesis's protocol) of isotropic data against
    # (1 - sqrt(k/d))^2 + 1/(2d). For k/d >= 1/2 the formula is within 0.005 of the mean of
    # 50 projections; the 5-projection mean adds a standard error below 0.002, so 0.01 is a
    # tolerance a correct projection meets and a missing normalization or a default
    # sqrt(d/k) rescaling (stress near 1/(2k)) misses by far.
    rng = np.random.default_rng(d * 1000 + k)
    data = rng.standard_normal((400, d))
    values = [stress(data, project_block(data, k, matrix, rng)).value for _ in range(5)]
    assert np.mean(values) == pytest.approx(expected_stress(d, k), abs=0.01)


def test_stress_rejects_mismatched_inputs() -> None:
    with pytest.raises(ValueError, match="same rows"):
        stress(np.ones((3, 2)), np.ones((4, 1)))
    with pytest.raises(ValueError, match="at least two"):
        stress(np.ones((1, 2)), np.ones((1, 1)))
    with pytest.raises(ValueError, match="coincide"):
        stress(np.ones((3, 2)), np.ones((3, 1)))
