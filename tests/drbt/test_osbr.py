"""OSBR: the thesis's worked example (Table 6.3 -> Eq. 6.2) and the other dissimilarities."""

from __future__ import annotations

import numpy as np
import pytest

from fedanon.algorithms.drbt.osbr import (
    euclidean_dissimilarity,
    gower_dissimilarity,
    jaccard_dissimilarity,
    lower_triangle,
)
from fedanon.errors import FedanonError

# Table 6.3: age, weight, h_rate, int_def, QRS, PR_int of patients 123, 342, 254, 446, 286.
CARDIAC = np.array(
    [
        [75, 80, 63, 32, 91, 193],
        [56, 64, 53, 24, 81, 174],
        [40, 52, 70, 24, 77, 129],
        [28, 58, 76, 40, 83, 251],
        [44, 90, 68, 44, 109, 128],
    ],
    dtype=float,
)
# Eq. 6.2, row by row.
THESIS_TRIANGLE = [2.2436, 3.3489, 2.4776, 3.6903, 3.8844, 3.1767, 3.0203, 4.0828, 4.1303, 3.9955]


def test_thesis_worked_example() -> None:
    matrix = euclidean_dissimilarity(CARDIAC)
    np.testing.assert_allclose(lower_triangle(matrix), THESIS_TRIANGLE, atol=5e-5)
    np.testing.assert_allclose(matrix, matrix.T)
    np.testing.assert_array_equal(np.diag(matrix), 0.0)


def test_population_std_would_not_reproduce_the_example() -> None:
    # The example needs the sample std: with ddof = 0 every distance grows by sqrt(5/4).
    z = (CARDIAC - CARDIAC.mean(0)) / CARDIAC.std(0)
    population = np.linalg.norm(z[1] - z[0])
    assert population == pytest.approx(THESIS_TRIANGLE[0] * np.sqrt(5 / 4), abs=1e-3)
    assert abs(population - THESIS_TRIANGLE[0]) > 0.2


def test_lower_triangle_order() -> None:
    square = np.array([[0, 1, 2], [10, 0, 3], [20, 30, 0]])
    np.testing.assert_array_equal(lower_triangle(square), [10, 20, 30])


def test_jaccard_by_hand() -> None:
    binary = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    matrix = jaccard_dissimilarity(binary)
    # Rows 1, 2: q = 1, r = 1, s = 1 -> 2/3. Row 1 against an all-zero row: r = 2 -> 1.
    assert matrix[1, 0] == pytest.approx(2 / 3)
    assert matrix[2, 0] == 1.0
    assert matrix[3, 2] == 0.0
    with pytest.raises(FedanonError, match="0/1"):
        jaccard_dissimilarity(np.array([[0, 2], [1, 0]]))


def test_gower_by_hand() -> None:
    age = np.array([20.0, 40.0, 60.0])
    colour = np.array(["red", "red", "blue"], dtype=object)
    test = np.array([1.0, 0.0, np.nan])
    matrix = gower_dissimilarity([age, colour, test], ["interval", "nominal", "asymmetric"])
    # (0,1): age 20/40 = 0.5, colour 0, test 1 vs 0 = 1 -> (0.5 + 0 + 1) / 3.
    assert matrix[1, 0] == pytest.approx(1.5 / 3)
    # (0,2): age 1, colour 1, test missing (not counted) -> 2 / 2.
    assert matrix[2, 0] == pytest.approx(1.0)
    # (1,2): age 0.5, colour 1; test missing -> 1.5 / 2.
    assert matrix[2, 1] == pytest.approx(0.75)
    # A 0-0 match of an asymmetric binary attribute is not counted.
    zeros = gower_dissimilarity(
        [np.array([0.0, 0.0]), np.array([1.0, 3.0])], ["asymmetric", "interval"]
    )
    assert zeros[1, 0] == 1.0


def test_osbr_rejects_bad_inputs() -> None:
    with pytest.raises(FedanonError, match="column 'b' is constant"):
        euclidean_dissimilarity(np.array([[1.0, 2.0], [3.0, 2.0]]), ["a", "b"])
    with pytest.raises(FedanonError, match="non-finite"):
        euclidean_dissimilarity(np.array([[1.0, np.nan], [3.0, 2.0]]))
    with pytest.raises(FedanonError, match="unknown kind"):
        gower_dissimilarity([np.array([1.0, 2.0])], ["ordinal"])
    with pytest.raises(FedanonError, match="other than 0/1"):
        gower_dissimilarity([np.array([1.0, 2.0])], ["asymmetric"])
