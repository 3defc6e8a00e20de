"""Anatomy (Xiao and Tao, VLDB 2006): l-diverse bucketization, the paper's peer method.

Records are hashed into one bucket per sensitive value. While at least l buckets are non-empty,
one group is formed from one random record of each of the l largest buckets; the at most l - 1
records left (all of distinct values) each join a group that does not yet hold their value. Every
group therefore has l or more records, all of distinct sensitive values.

Used for (alpha,k) with l = max(k, ceil(1/alpha)): a group then has >= k records and each value's
share is 1/|group| <= 1/l <= alpha. The algorithm needs every value to occur in at most n/l
records (Xiao and Tao's eligibility condition); otherwise no group can be formed for some record.
Anatomy ignores the QID values entirely, which is exactly why the lossy-join method, whose classes
come from top-down recoding and so hold similar QIDs, answers queries better.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from fedanon.algorithms.alphak.params import AlphaK
from fedanon.errors import InfeasibleError


def diversity_for(params: AlphaK) -> int:
    """l = max(k, ceil(1/alpha)), the smallest l whose l-diverse groups are (alpha,k)."""
    return max(params.k, math.ceil(1 / params.alpha))


def anatomy_groups(sensitive: np.ndarray, n_values: int, params: AlphaK, seed: int) -> np.ndarray:
    """A group index per record (records given by their sensitive value codes)."""
    n = len(sensitive)
    ell = diversity_for(params)
    counts = np.bincount(sensitive, minlength=n_values)
    if counts.max() * ell > n:
        raise InfeasibleError(
            f"Anatomy infeasible: a sensitive value occurs in {counts.max()} of {n} records, more "
            f"than n/l with l = max(k, ceil(1/alpha)) = {ell}"
        )
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    by_value = order[np.argsort(sensitive[order], kind="stable")]
    starts = np.concatenate([[0], np.cumsum(counts)])
    taken = np.zeros(n_values, dtype=np.int64)
    group = np.full(n, -1, dtype=np.int64)
    heap = [(-int(c), v) for v, c in enumerate(counts) if c > 0]
    heapq.heapify(heap)
    n_groups = 0
    while len(heap) >= ell:
        largest = [heapq.heappop(heap) for _ in range(ell)]
        for negative, value in largest:
            group[by_value[starts[value] + taken[value]]] = n_groups
            taken[value] += 1
            if negative + 1 < 0:
                heapq.heappush(heap, (negative + 1, value))
        n_groups += 1
    _place_residue(group, sensitive, heap, by_value, starts, taken, n_groups, rng)
    return group


def _place_residue(
    group: np.ndarray,
    sensitive: np.ndarray,
    heap: list[tuple[int, int]],
    by_value: np.ndarray,
    starts: np.ndarray,
    taken: np.ndarray,
    n_groups: int,
    rng: np.random.Generator,
) -> None:
    """Each leftover record joins a random group without its sensitive value."""
    for _, value in heap:
        has_value = np.zeros(n_groups, dtype=bool)
        has_value[group[(sensitive == value) & (group >= 0)]] = True
        for record in by_value[starts[value] + taken[value] : starts[value + 1]]:
            free = np.flatnonzero(~has_value)
            target = int(rng.choice(free))
            group[record] = target
            has_value[target] = True
