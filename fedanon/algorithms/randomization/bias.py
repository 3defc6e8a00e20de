"""Expected and measured bias of the support of QID value combinations.

A combination q fixes the values of some QID positions Q. After randomization a record supports
q when it supported q on the positions that were not redrawn and every redrawn position of Q
drew q's value. Summing over which subset S of Q is redrawn gives the expected support exactly:

    E[supp'(q)] = sum_{S subset of Q} P(S) supp(q without S) prod_{i in S} f_i(q_i)

with P(S) = p_i for S = {i} and 1 - sum_{i in Q} p_i for S = {} under RA, and the hypergeometric
C(m - |Q|, k - |S|) / C(m, k) under enhanced RA(k). For RA with uniform p the relative bias is
(1/m) sum_{i in Q} (1/lift_i - 1) with lift_i = supp(q) / (supp(q without i) f_i(q_i)), which
is the paper's B(q) (its absolute value). The variance of supp'(q) follows from the same
per-record probabilities, since records are randomized independently.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Combination:
    """Values at QID positions: positions[j] holds code values[j]."""

    positions: tuple[int, ...]
    values: tuple[int, ...]

    def matches(self, codes: np.ndarray) -> np.ndarray:
        """n x |Q| booleans: does record r hold q's value at position j."""
        return codes[:, list(self.positions)] == np.asarray(self.values, dtype=codes.dtype)

    def support(self, codes: np.ndarray) -> int:
        return int(self.matches(codes).all(axis=1).sum())

    def label(self, qids: Sequence[str], domains: Sequence[Sequence[str]]) -> str:
        return " & ".join(
            f"{qids[i]}={domains[i][v]}" for i, v in zip(self.positions, self.values, strict=True)
        )


def subset_probabilities(
    positions: Sequence[int], m: int, method: str, p: np.ndarray | None = None, k: int = 1
) -> list[tuple[tuple[int, ...], float]]:
    """(S, P(the redrawn positions within Q are exactly S)) for every S of Q with P > 0."""
    q = len(positions)
    out: list[tuple[tuple[int, ...], float]] = []
    if method == "ra":
        assert p is not None
        out.append(((), 1.0 - float(sum(p[i] for i in positions))))
        out += [((j,), float(p[i])) for j, i in enumerate(positions)]
        return out
    total = math.comb(m, k)
    for size in range(min(q, k) + 1):
        chance = math.comb(m - q, k - size) / total
        out += [(s, chance) for s in itertools.combinations(range(q), size)]
    return out


def expected_support(
    combo: Combination,
    codes: np.ndarray,
    frequencies: Sequence[np.ndarray],
    method: str,
    p: np.ndarray | None = None,
    k: int = 1,
) -> tuple[float, float]:
    """Mean and variance of q's support after randomization (exact, given the data)."""
    match = combo.matches(codes)
    m = codes.shape[1]
    draws = [float(frequencies[i][v]) for i, v in zip(combo.positions, combo.values, strict=True)]
    chance = np.zeros(len(codes))
    for subset, weight in subset_probabilities(combo.positions, m, method, p, k):
        keep = [j for j in range(len(combo.positions)) if j not in subset]
        hit = match[:, keep].all(axis=1) if keep else np.ones(len(codes), dtype=bool)
        chance += weight * math.prod(draws[j] for j in subset) * hit
    return float(chance.sum()), float((chance * (1 - chance)).sum())


def lift_bias(
    combo: Combination, codes: np.ndarray, frequencies: Sequence[np.ndarray], p: np.ndarray
) -> float:
    """The paper's relative bias of RA, sum_{i in Q} p_i (1/lift_i - 1) (signed)."""
    match = combo.matches(codes)
    n = len(codes)
    supp = match.all(axis=1).sum() / n
    total = 0.0
    for j, (i, v) in enumerate(zip(combo.positions, combo.values, strict=True)):
        others = [x for x in range(len(combo.positions)) if x != j]
        rest = (match[:, others].all(axis=1).sum() / n) if others else 1.0
        lift = supp / (rest * frequencies[i][v])
        total += p[i] * (1.0 / lift - 1.0)
    return float(total)


def frequent_combinations(
    codes: np.ndarray, sizes: np.ndarray, length: int, top: int
) -> list[tuple[Combination, int]]:
    """The `top` most frequent combinations of `length` QID values (support, then order)."""
    best: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = []
    for positions in itertools.combinations(range(codes.shape[1]), length):
        dims = tuple(int(sizes[i]) for i in positions)
        flat = np.ravel_multi_index(tuple(codes[:, i].astype(np.int64) for i in positions), dims)
        counts = np.bincount(flat, minlength=math.prod(dims))
        leaders = np.argsort(-counts, kind="stable")[:top]
        for index in leaders:
            if counts[index] > 0:
                values = tuple(int(x) for x in np.unravel_index(index, dims))
                best.append((int(counts[index]), positions, values))
    best.sort(key=lambda t: (-t[0], t[1], t[2]))
    return [(Combination(pos, val), supp) for supp, pos, val in best[:top]]
