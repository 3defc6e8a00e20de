"""Test inputs for the secure sums: reproducible count vectors and the plain sum to compare to."""

from __future__ import annotations

import numpy as np


def random_vectors(n: int, length: int, seed: int, full_range: bool) -> list[np.ndarray]:
    """Test inputs (not secrets): full-range words exercise wraparound, small ones are counts."""
    rng = np.random.default_rng(seed)
    high = 2**64 if full_range else 1000
    return [rng.integers(0, high, size=length, dtype=np.uint64) for _ in range(n)]


def plain_sum(vectors: list[np.ndarray]) -> np.ndarray:
    """The insecure reference: numpy's uint64 addition, which wraps modulo 2^64."""
    total = np.zeros(len(vectors[0]), dtype=np.uint64)
    for vector in vectors:
        total += vector
    return total
