"""z-score and project_block: the two calls a vertical party makes on its own block."""

from __future__ import annotations

import numpy as np
import pytest

from fedanon.algorithms.drbt.matrices import secure_rng
from fedanon.algorithms.drbt.projection import check_projection, project_block, zscore
from fedanon.errors import FedanonError


def test_zscore_uses_population_std() -> None:
    z = zscore(np.array([[1.0, 10.0], [2.0, 10.5], [3.0, 12.0]]))
    # Column 1: mean 2, population std sqrt(2/3) -> -1.2247, 0, 1.2247 (sample std would give 1).
    np.testing.assert_allclose(z[:, 0], [-np.sqrt(1.5), 0.0, np.sqrt(1.5)])
    np.testing.assert_allclose(z.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(z.std(axis=0), 1.0)


def test_constant_column_is_an_input_error_naming_it() -> None:
    block = np.array([[1.0, 5.0], [2.0, 5.0], [4.0, 5.0]])
    with pytest.raises(FedanonError, match="column 'weight' is constant"):
        zscore(block, ["age", "weight"])
    with pytest.raises(FedanonError, match="column '#2' is constant"):
        zscore(block)
    relaxed = zscore(block, allow_constant=True)
    np.testing.assert_array_equal(relaxed[:, 1], 0.0)
    np.testing.assert_allclose(relaxed[:, 0].std(), 1.0)


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (np.array([1.0, 2.0, 3.0]), "2-D"),
        (np.empty((0, 3)), "non-empty"),
        (np.array([[1.0, 2.0]]), "at least 2 rows"),
        (np.array([[1.0, 2.0], [np.nan, 3.0], [2.0, 1.0]]), "row 2, column #1"),
        (np.array([[1.0, np.inf], [2.0, 3.0]]), "row 1, column #2"),
    ],
)
def test_zscore_rejects_bad_blocks(block: np.ndarray, message: str) -> None:
    with pytest.raises(FedanonError, match=message):
        zscore(block)


@pytest.mark.parametrize(
    ("d", "k", "matrix", "message"),
    [
        (5, 5, "sparse", "rotation, not a reduction"),
        (5, 6, "sparse", "would add dimensions"),
        (5, 0, "gaussian", "at least 1"),
        (1, 1, "gaussian", "at least 2 attributes"),
        (5, 2, "orthogonal", "unknown matrix"),
    ],
)
def test_projection_refuses_what_drbt_does_not_allow(
    d: int, k: int, matrix: str, message: str
) -> None:
    with pytest.raises(FedanonError, match=message):
        check_projection(d, k, matrix)
    with pytest.raises(FedanonError, match=message):
        project_block(np.ones((3, d)), k, matrix, np.random.default_rng(0))


@pytest.mark.parametrize("matrix", ["gaussian", "sparse"])
def test_project_block_is_the_product_with_a_unit_column_matrix(matrix: str) -> None:
    # Projecting the identity returns R itself: unit columns, each mixing >= 2 attributes.
    r = project_block(np.eye(6), 4, matrix, secure_rng(9))
    np.testing.assert_allclose(np.linalg.norm(r, axis=0), 1.0)
    assert (np.count_nonzero(r, axis=0) >= 2).all()
    block = np.random.default_rng(1).standard_normal((20, 6))
    np.testing.assert_allclose(project_block(block, 4, matrix, secure_rng(9)), block @ r)


def test_rescale_multiplies_by_sqrt_d_over_k() -> None:
    block = np.random.default_rng(2).standard_normal((10, 9))
    plain = project_block(block, 4, "sparse", secure_rng(3))
    scaled = project_block(block, 4, "sparse", secure_rng(3), rescale=True)
    np.testing.assert_allclose(scaled, plain * 1.5)


def test_each_call_draws_a_new_matrix() -> None:
    block = np.random.default_rng(3).standard_normal((10, 8))
    rng = np.random.default_rng(4)
    assert not np.allclose(
        project_block(block, 3, "gaussian", rng), project_block(block, 3, "gaussian", rng)
    )
