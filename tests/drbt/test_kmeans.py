"""The numpy K-means: recovery of clear clusters, seeding, empty clusters, argument checks."""

from __future__ import annotations

import numpy as np
import pytest

from fedanon.algorithms.drbt.fmeasure import overall_f_measure
from fedanon.algorithms.drbt.kmeans import INITS, kmeans


def _blobs(rng: np.random.Generator, per: int = 60) -> tuple[np.ndarray, np.ndarray]:
    centres = np.array([[0.0, 0.0, 0.0], [10.0, 0.0, 0.0], [0.0, 10.0, 0.0], [0.0, 0.0, 10.0]])
    truth = np.repeat(np.arange(4), per)
    return centres[truth] + rng.standard_normal((truth.size, 3)), truth


@pytest.mark.parametrize("init", INITS)
def test_recovers_well_separated_clusters(init: str) -> None:
    rng = np.random.default_rng(0)
    data, truth = _blobs(rng)
    # Ten restarts: a single Forgy run can put two seeds in one blob (a local optimum).
    result = kmeans(data, 4, rng, init=init, n_init=10)
    assert overall_f_measure(truth, result.labels) == 1.0
    for label in range(4):
        np.testing.assert_allclose(result.centers[label], data[result.labels == label].mean(0))
    assert result.inertia == pytest.approx(
        sum(((data[result.labels == c] - result.centers[c]) ** 2).sum() for c in range(4))
    )


def test_restarts_never_increase_inertia() -> None:
    data = np.random.default_rng(1).standard_normal((300, 4))
    one = kmeans(data, 6, np.random.default_rng(2), n_init=1)
    many = kmeans(data, 6, np.random.default_rng(2), n_init=8)
    assert many.inertia <= one.inertia


def test_seed_rows_fix_the_start() -> None:
    data, _ = _blobs(np.random.default_rng(3), per=20)
    a = kmeans(data, 4, np.random.default_rng(4), seed_rows=np.array([0, 20, 40, 60]))
    b = kmeans(data, 4, np.random.default_rng(99), seed_rows=np.array([0, 20, 40, 60]))
    np.testing.assert_array_equal(a.labels, b.labels)
    # Seeds in distinct blobs: label c is the blob of seed c.
    np.testing.assert_array_equal(a.labels, np.repeat(np.arange(4), 20))


def test_duplicate_seeds_do_not_leave_an_empty_cluster() -> None:
    # Rows 0 and 1 coincide: both centres start equal, one cluster empties and is reseeded.
    data = np.vstack([[0.0, 0.0], [0.0, 0.0], np.random.default_rng(5).standard_normal((40, 2))])
    data[-10:] += 8.0
    result = kmeans(data, 2, np.random.default_rng(6), seed_rows=np.array([0, 1]))
    assert np.isfinite(result.centers).all()
    assert set(result.labels) == {0, 1}


def test_kmeans_rejects_bad_arguments() -> None:
    data = np.zeros((5, 2))
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="n_clusters"):
        kmeans(data, 6, rng)
    with pytest.raises(ValueError, match="unknown init"):
        kmeans(data, 2, rng, init="forgy")
    with pytest.raises(ValueError, match="at least 1"):
        kmeans(data, 2, rng, n_init=0)
    with pytest.raises(ValueError, match="distinct row indices"):
        kmeans(data, 2, rng, seed_rows=np.array([1, 1]))
