"""K-means (Lloyd's algorithm), vectorized with numpy, for the DRBT utility protocol.

The thesis used K-means with "random seed selection" (section 7.4.1, Step 6). The default here
is that: Forgy initialisation (K distinct data points drawn uniformly) and one run. The
protocol passes the same seed rows to the run on the original data and to the run on the
release (`seed_rows`; its default `starts="paired"`), so the F-measure measures what the
projection changes rather than K-means's own instability: an isometric release would score
exactly 1. ``k-means++`` seeding and several restarts (keeping the lowest inertia) are
available for users who want the clustering itself to be as good as possible.

The products with the K centres go through `np.einsum` rather than BLAS matmul: for K of a few
columns a multi-threaded BLAS spends more time waking threads than computing, which on a busy
2-core machine made one run 30 times slower.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INITS = ("random", "k-means++")


@dataclass(frozen=True)
class KMeansResult:
    """Cluster labels 0..K-1 per row, the centres, the within-cluster sum of squares."""

    labels: np.ndarray
    centers: np.ndarray
    inertia: float
    iterations: int


def kmeans(
    data: np.ndarray,
    n_clusters: int,
    rng: np.random.Generator,
    *,
    init: str = "random",
    n_init: int = 1,
    max_iter: int = 300,
    seed_rows: np.ndarray | None = None,
) -> KMeansResult:
    """Cluster the rows of `data` into `n_clusters` groups; the best of `n_init` runs is kept.

    `seed_rows` (row indices) fixes the initial centres of a single run instead of `init`.
    A run stops when no label changes (Lloyd's fixed point) or after `max_iter` iterations.
    """
    points = np.asarray(data, dtype=float)
    if points.ndim != 2:
        raise ValueError("kmeans needs a 2-D array")
    if not 1 <= n_clusters <= points.shape[0]:
        raise ValueError(f"n_clusters must be in 1..{points.shape[0]}, got {n_clusters}")
    if init not in INITS:
        raise ValueError(f"unknown init '{init}' (expected one of {', '.join(INITS)})")
    if n_init < 1 or max_iter < 1:
        raise ValueError("n_init and max_iter must be at least 1")
    squared_norms = np.einsum("ij,ij->i", points, points)
    if seed_rows is not None:
        rows = np.asarray(seed_rows)
        if rows.shape != (n_clusters,) or np.unique(rows).size != n_clusters:
            raise ValueError(f"seed_rows must be {n_clusters} distinct row indices")
        return _lloyd(points, squared_norms, points[rows].copy(), max_iter)
    best: KMeansResult | None = None
    for _ in range(n_init):
        seeds = _init_centers(points, squared_norms, n_clusters, init, rng)
        result = _lloyd(points, squared_norms, seeds, max_iter)
        if best is None or result.inertia < best.inertia:
            best = result
    assert best is not None
    return best


def _squared_distances(
    points: np.ndarray, squared_norms: np.ndarray, centers: np.ndarray
) -> np.ndarray:
    """m x K squared Euclidean distances through one product with the centres (clipped at 0)."""
    cross = np.einsum("ij,kj->ik", points, centers)
    result = squared_norms[:, None] - 2.0 * cross + np.einsum("ij,ij->i", centers, centers)
    return np.maximum(result, 0.0, out=result)


def forgy_rows(m: int, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
    """K distinct row indices drawn uniformly: Forgy's initial centres."""
    return rng.choice(m, size=n_clusters, replace=False)


def _init_centers(
    points: np.ndarray,
    squared_norms: np.ndarray,
    n_clusters: int,
    init: str,
    rng: np.random.Generator,
) -> np.ndarray:
    m = points.shape[0]
    if init == "random":
        return points[forgy_rows(m, n_clusters, rng)].copy()
    centers = np.empty((n_clusters, points.shape[1]))
    centers[0] = points[rng.integers(m)]
    closest = _squared_distances(points, squared_norms, centers[:1])[:, 0]
    for i in range(1, n_clusters):
        total = closest.sum()
        # All points coincide with a centre already: any point is as good as another.
        index = rng.integers(m) if total == 0 else rng.choice(m, p=closest / total)
        centers[i] = points[index]
        new = _squared_distances(points, squared_norms, centers[i : i + 1])[:, 0]
        np.minimum(closest, new, out=closest)
    return centers


def _lloyd(
    points: np.ndarray, squared_norms: np.ndarray, centers: np.ndarray, max_iter: int
) -> KMeansResult:
    n_clusters = centers.shape[0]
    labels = np.full(points.shape[0], -1)
    iterations = 0
    while iterations < max_iter:
        iterations += 1
        distances = _squared_distances(points, squared_norms, centers)
        new_labels = distances.argmin(axis=1)
        if np.array_equal(new_labels, labels):
            break
        labels = new_labels
        centers = _update_centers(points, labels, distances, n_clusters)
    distances = _squared_distances(points, squared_norms, centers)
    inertia = float(distances[np.arange(points.shape[0]), labels].sum())
    return KMeansResult(labels, centers, inertia, iterations)


def _update_centers(
    points: np.ndarray, labels: np.ndarray, distances: np.ndarray, n_clusters: int
) -> np.ndarray:
    """Cluster means; an emptied cluster restarts at the point farthest from its own centre."""
    members = (labels[:, None] == np.arange(n_clusters)).astype(float)
    counts = members.sum(axis=0)
    centers = np.einsum("ik,ij->kj", members, points)
    filled = counts > 0
    centers[filled] /= counts[filled, None]
    if not filled.all():
        own = distances[np.arange(points.shape[0]), labels]
        farthest = np.argsort(own)[::-1]
        for slot, index in zip(np.flatnonzero(~filled), farthest, strict=False):
            centers[slot] = points[index]
    return centers
