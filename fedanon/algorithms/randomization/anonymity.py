"""Attribute probabilities and probabilistic anonymity Pa (Yang and Qiao, 2010).

Pa is the effective number of original records an attacker must consider for one released
record: ln Pa = sum_i p_i (-ln p_i + H_i) for RA, with H_i the natural-log entropy of QID i's
marginal. Uniform p gives Pa = m (prod_i e^{H_i})^{1/m}; the Pa-maximizing p_i is proportional
to e^{H_i} and gives Pa = sum_i e^{H_i}. For enhanced RA(k) (k distinct attributes drawn
uniformly): ln Pa = ln C(m, k) + (k / m) sum_i H_i. Everything works on marginal counts, so the
leader of a federation computes the same numbers from the securely summed histograms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fedanon.errors import FedanonError

METHODS = ("ra", "enhanced")
# How far a user's probabilities may be from summing to 1 (rounding in a typed list).
P_SUM_TOLERANCE = 1e-6


def entropy(counts: np.ndarray) -> float:
    """Natural-log entropy of the distribution given by non-negative counts."""
    counts = np.asarray(counts, dtype=float)
    total = counts.sum()
    if total <= 0:
        return 0.0
    f = counts[counts > 0] / total
    return float(-(f * np.log(f)).sum())


def entropies(marginals: Sequence[np.ndarray]) -> np.ndarray:
    return np.array([entropy(c) for c in marginals])


def attribute_probabilities(
    choice: str | Sequence[float], marginals: Sequence[np.ndarray], qids: Sequence[str]
) -> np.ndarray:
    """p for RA: 'uniform' (1/m), 'optimal' (e^{H_i} / sum_j e^{H_j}) or the user's list."""
    m = len(marginals)
    if isinstance(choice, str):
        if choice == "uniform":
            return np.full(m, 1.0 / m)
        if choice == "optimal":
            # Subtracting the largest entropy keeps e^H finite for very wide domains.
            h = entropies(marginals)
            weights = np.exp(h - h.max())
            return weights / weights.sum()
        raise FedanonError(f"p '{choice}' unknown (choose uniform, optimal or a list of numbers)")
    p = np.asarray(list(choice), dtype=float)
    if p.size != m:
        raise FedanonError(
            f"{p.size} attribute probabilities for {m} QID columns ({', '.join(qids)})"
        )
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise FedanonError("attribute probabilities must be non-negative numbers")
    if abs(p.sum() - 1.0) > P_SUM_TOLERANCE:
        raise FedanonError(f"the attribute probabilities sum to {p.sum():.6g}, not 1")
    return p / p.sum()


def log_pa_ra(p: np.ndarray, h: np.ndarray) -> float:
    """ln Pa of RA: sum_i p_i (-ln p_i + H_i), with 0 ln 0 = 0."""
    p = np.asarray(p, dtype=float)
    h = np.asarray(h, dtype=float)
    used = p > 0
    return float((p[used] * (-np.log(p[used]) + h[used])).sum())


def log_pa_enhanced(k: int, h: np.ndarray) -> float:
    """ln Pa of enhanced RA(k): ln C(m, k) + (k / m) sum_i H_i."""
    m = len(h)
    return math.log(math.comb(m, k)) + k / m * float(np.sum(h))


def probabilistic_anonymity(
    method: str, marginals: Sequence[np.ndarray], p: np.ndarray | None = None, k: int = 1
) -> float:
    """Pa of a release made by `method` from data with these QID marginals."""
    h = entropies(marginals)
    if method == "ra":
        assert p is not None
        return math.exp(log_pa_ra(p, h))
    if method == "enhanced":
        return math.exp(log_pa_enhanced(k, h))
    raise FedanonError(f"method '{method}' unknown (choose {' or '.join(METHODS)})")


def changed_cell_fraction(
    method: str, marginals: Sequence[np.ndarray], p: np.ndarray | None = None, k: int = 1
) -> float:
    """Expected fraction of QID cells whose value changes.

    A redrawn cell of QID i keeps its value with probability sum_v f_i(v)^2 (the chance that
    the draw hits the old value, averaged over the records), so the expected number of changed
    cells per record is sum_i q_i (1 - sum_v f_i(v)^2), q_i the chance that i is redrawn
    (p_i for RA, k/m for enhanced RA).
    """
    m = len(marginals)
    keep = np.array(
        [float(((c / c.sum()) ** 2).sum()) for c in (np.asarray(x, dtype=float) for x in marginals)]
    )
    q = np.asarray(p, dtype=float) if method == "ra" else np.full(m, k / m)
    return float((q * (1 - keep)).sum() / m)
