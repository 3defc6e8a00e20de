"""Stress (thesis Eq. 2.9) between the z-scored data and its projection.

Reported as the thesis reports it: sum (dhat_ij - d_ij)^2 / sum d_ij^2 over pairs i < j, with
Euclidean distances, no square root. All pairs are used when there are at most `max_pairs`;
beyond that the ratio is estimated on all pairs among a uniform random sample of objects, as
many as keep the pair count within `max_pairs`. Every pair then has the same chance of being
used (a uniform sample of pairs, drawn without replacement), and the distances are computed
block-wise with one matrix product instead of gathering rows pair by pair, which was 40 times
slower. The result says how many pairs and objects it used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_MAX_PAIRS = 2_000_000
_CHUNK = 250_000  # pairs (or row-block cells) handled at once: bounds memory to ~100 MB


@dataclass(frozen=True)
class Stress:
    """The stress value and how it was obtained (`exact` = all pairs of all objects)."""

    value: float
    pairs: int
    objects: int
    exact: bool


def expected_stress(d: int, k: int) -> float:
    """Approximate stress of an unscaled unit-column projection d -> k: (1 - sqrt(k/d))^2 + 1/(2d).

    The first term is the shrinkage of every distance by sqrt(k/d); the second the spread of the
    ratio dhat/d around it. A sanity check, not a bound: correlated data deviates from it.
    """
    return (1.0 - np.sqrt(k / d)) ** 2 + 1.0 / (2.0 * d)


def stress(
    original: np.ndarray,
    projected: np.ndarray,
    rng: np.random.Generator | None = None,
    *,
    max_pairs: int = DEFAULT_MAX_PAIRS,
) -> Stress:
    """Stress of `projected` (m x k) against `original` (m x d), rows matched by position.

    `rng` is needed only when m(m-1)/2 > `max_pairs` and objects are sampled.
    """
    a = np.asarray(original, dtype=float)
    b = np.asarray(projected, dtype=float)
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0]:
        raise ValueError(f"need two 2-D arrays with the same rows, got {a.shape} and {b.shape}")
    m = a.shape[0]
    if m < 2:
        raise ValueError("stress needs at least two objects")
    if max_pairs < 1:
        raise ValueError("max_pairs must be at least 1")
    objects = m
    if m * (m - 1) // 2 > max_pairs:
        if rng is None:
            raise ValueError(f"{m} objects exceed max_pairs={max_pairs}: pass an rng to sample")
        # Largest s with s(s-1)/2 <= max_pairs (at least 2).
        objects = max(2, int((1 + np.sqrt(1 + 8 * max_pairs)) // 2))
        sample = np.sort(rng.choice(m, size=objects, replace=False))
        a, b = a[sample], b[sample]
    num, den = _all_pairs(a, b)
    if den == 0:
        raise ValueError("all objects coincide in the original space: stress is undefined")
    return Stress(num / den, objects * (objects - 1) // 2, objects, objects == m)


def _all_pairs(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Sums over i < j, one block of rows against all later rows at a time."""
    m = a.shape[0]
    step = max(1, _CHUNK // m)
    num = den = 0.0
    for start in range(0, m - 1, step):
        stop = min(start + step, m - 1)
        rows = slice(start, stop)
        d = _block_distances(a[rows], a[start + 1 :])
        dhat = _block_distances(b[rows], b[start + 1 :])
        # Row r of the block (object start + r) pairs with later objects start+r+1.. only.
        upper = np.arange(stop - start)[:, None] <= np.arange(m - start - 1)[None, :]
        num += float(((dhat - d) ** 2)[upper].sum())
        den += float((d**2)[upper].sum())
    return num, den


def _block_distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Euclidean distances between the rows of x and the rows of y."""
    squared = np.einsum("ij,ij->i", x, x)[:, None] - 2.0 * (x @ y.T) + np.einsum("ij,ij->i", y, y)
    return np.sqrt(np.maximum(squared, 0.0))
