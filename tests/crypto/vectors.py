"""Test inputs for the secure sums: reproducible count vectors and the plain sum to compare to."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

SumTest = Callable[..., None]


def sum_cases(max_examples: int) -> Callable[[SumTest], SumTest]:
    """Hypothesis inputs for a test of a secure sum against `plain_sum`: n parties, a vector
    length, a seed and the word range; plus two 10^6-long vectors, which random draws never
    reach and which are where a slow or wrapping implementation shows."""

    def decorate(test: SumTest) -> SumTest:
        long_vectors = example(n=3, length=10**6, seed=1, full_range=False)(
            example(n=16, length=10**6, seed=2, full_range=True)(test)
        )
        drawn = given(
            n=st.integers(2, 16),
            length=st.integers(0, 2000),
            seed=st.integers(0, 2**32),
            full_range=st.booleans(),
        )(long_vectors)
        return settings(max_examples=max_examples, deadline=None)(drawn)

    return decorate


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
