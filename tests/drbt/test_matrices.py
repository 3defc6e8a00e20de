"""The projection matrices: distributions, unit columns, redraw of degenerate columns.

Statistical checks use fixed seeds and state their tolerance: a proportion is compared with its
expectation within 5 standard errors (a false alarm has probability below 1e-6 for a correct
generator; a wrong distribution, e.g. p(0) = 1/2 instead of 2/3, misses by hundreds of them).
"""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from fedanon.algorithms.drbt.matrices import MATRICES, random_matrix, secure_rng


def _within(observed: float, expected: float, n: int, p: float | None = None) -> bool:
    """|observed - expected| <= 5 standard errors of a proportion p over n draws."""
    p = expected if p is None else p
    return abs(observed - expected) <= 5 * np.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("kind", MATRICES)
def test_columns_have_unit_length(kind: str) -> None:
    matrix = random_matrix(12, 7, kind, np.random.default_rng(1))
    assert matrix.shape == (12, 7)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=0), 1.0, atol=1e-12)


def test_sparse_entries_follow_achlioptas() -> None:
    d, k = 30, 2000
    matrix = random_matrix(d, k, "sparse", np.random.default_rng(2))
    n = d * k
    zero = matrix == 0
    # P(column redrawn) < 1e-4 at d = 30, so the conditioning barely moves p(0) = 2/3.
    assert _within(zero.mean(), 2 / 3, n)
    positive = (matrix > 0).sum() / (~zero).sum()
    assert _within(positive, 1 / 2, int((~zero).sum()))
    # Unit length with equal magnitudes: every non-zero entry of a column is +-1/sqrt(nnz).
    nnz = np.count_nonzero(matrix, axis=0)
    np.testing.assert_allclose(np.abs(matrix).max(axis=0), 1 / np.sqrt(nnz))
    np.testing.assert_allclose(np.abs(matrix).sum(axis=0), np.sqrt(nnz))
    # Zero mean: the mean entry is within 5 standard errors of 0.
    assert abs(matrix.mean()) <= 5 * matrix.std() / np.sqrt(n)


def test_gaussian_columns_are_uniform_directions() -> None:
    d, k = 10, 20000
    matrix = random_matrix(d, k, "gaussian", np.random.default_rng(3))
    assert np.count_nonzero(matrix) == d * k
    n = d * k
    assert abs(matrix.mean()) <= 5 * matrix.std() / np.sqrt(n)
    # A normalized Gaussian column is uniform on the sphere: E[x^4] = 3 / (d (d + 2)).
    # The sparse kind gives E[1/nnz] / d (about 0.029 here, not 0.025), so this can tell them apart.
    fourth = matrix**4
    expected = 3 / (d * (d + 2))
    assert abs(fourth.mean() - expected) <= 5 * fourth.std() / np.sqrt(n)


def test_degenerate_sparse_columns_are_redrawn_at_d_2() -> None:
    # At d = 2 eight of nine raw columns have fewer than two non-zeros: all must be redrawn.
    matrix = random_matrix(2, 3000, "sparse", np.random.default_rng(4))
    np.testing.assert_allclose(np.abs(matrix), 1 / np.sqrt(2))
    # The four sign patterns stay equally likely: half the entries are positive.
    assert _within((matrix > 0).mean(), 1 / 2, matrix.size)


def test_redraw_conditions_the_nonzero_count_and_nothing_else() -> None:
    # nnz of a column at d = 5 is Binomial(5, 1/3) conditioned on nnz >= 2.
    d, k = 5, 20000
    matrix = random_matrix(d, k, "sparse", np.random.default_rng(5))
    nnz = np.count_nonzero(matrix, axis=0)
    binomial = {j: comb(d, j) * (1 / 3) ** j * (2 / 3) ** (d - j) for j in range(d + 1)}
    kept_mass = sum(binomial[j] for j in range(2, d + 1))
    assert nnz.min() >= 2
    for j in range(2, d + 1):
        assert _within((nnz == j).mean(), binomial[j] / kept_mass, k), j


def test_secure_rng_seeding() -> None:
    same = [random_matrix(8, 3, "sparse", secure_rng(42)) for _ in range(2)]
    np.testing.assert_array_equal(same[0], same[1])
    fresh = [random_matrix(8, 3, "gaussian", secure_rng()) for _ in range(2)]
    assert not np.array_equal(fresh[0], fresh[1])
    with pytest.raises(ValueError, match="non-negative"):
        secure_rng(-1)


def test_random_matrix_rejects_bad_arguments() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown matrix kind"):
        random_matrix(5, 2, "dense", rng)
    with pytest.raises(ValueError, match="at least 2 attributes"):
        random_matrix(1, 1, "gaussian", rng)
    with pytest.raises(ValueError, match="at least 1"):
        random_matrix(5, 0, "sparse", rng)


@pytest.mark.parametrize(("d", "k"), [(3, 2), (4, 2), (4, 3), (5, 3)])
def test_small_sparse_matrices_have_full_rank(d: int, k: int) -> None:
    # Without the whole-matrix redraw, two equal or opposite columns turn up within a few dozen
    # draws at these sizes (a 4 -> 2 release once had att1 == att2).
    rng = np.random.default_rng(d * 10 + k)
    assert all(np.linalg.matrix_rank(random_matrix(d, k, "sparse", rng)) == k for _ in range(500))
