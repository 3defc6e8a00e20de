"""The coordinator's half: from (global) marginal counts to the randomization plan.

The leader of a federation holds only the securely summed histograms; the centralized API is
the same code with the table's own histograms. Validation happens here, once, so a QID with a
single value, impossible probabilities or k > m are refused before any record is touched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedanon.algorithms.randomization.anonymity import (
    METHODS,
    attribute_probabilities,
    changed_cell_fraction,
    entropies,
    probabilistic_anonymity,
)
from fedanon.algorithms.randomization.sampler import check_k, check_marginals
from fedanon.errors import FedanonError


@dataclass(frozen=True)
class Plan:
    """What every holder of records needs to randomize them: marginals, method, p or k."""

    qids: tuple[str, ...]
    marginals: tuple[np.ndarray, ...]
    method: str
    p: np.ndarray | None  # RA only
    k: int  # enhanced only (1 for RA)

    @property
    def records(self) -> int:
        return int(self.marginals[0].sum())

    def pa(self) -> float:
        return probabilistic_anonymity(self.method, self.marginals, self.p, self.k)

    def expected_changed_fraction(self) -> float:
        return changed_cell_fraction(self.method, self.marginals, self.p, self.k)

    def summary(self) -> dict[str, object]:
        """The plan as report fields (marginal counts left out: they can be long)."""
        h = entropies(self.marginals)
        return {
            "method": self.method,
            "qids": list(self.qids),
            "attrs": self.k if self.method == "enhanced" else None,
            "p": None if self.p is None else [round(float(x), 6) for x in self.p],
            "records": self.records,
            "Pa": round(self.pa(), 4),
            "expected_changed_cell_fraction": round(self.expected_changed_fraction(), 6),
            "attributes": {
                q: {
                    "domain": len(c),
                    "entropy": round(float(e), 6),
                    "exp_entropy": round(math.exp(e), 4),
                }
                for q, c, e in zip(self.qids, self.marginals, h, strict=True)
            },
        }


def resolve_k(method: str, attrs: int | None, m: int) -> int:
    """k of enhanced RA (default 2, or m when m < 2); RA takes no --attrs."""
    if method not in METHODS:
        raise FedanonError(f"method '{method}' unknown (choose {' or '.join(METHODS)})")
    if method == "ra":
        if attrs not in (None, 1):
            raise FedanonError(
                "--attrs applies to --method enhanced only (RA redraws one attribute per record)"
            )
        return 1
    k = min(2, m) if attrs is None else int(attrs)
    check_k(k, m)
    return k


def make_plan(
    qids: Sequence[str],
    marginals: Sequence[np.ndarray],
    method: str,
    attrs: int | None = None,
    p: str | Sequence[float] = "uniform",
) -> Plan:
    """Validate the parameters against the marginals and fix p (RA) or k (enhanced)."""
    qids = tuple(qids)
    marginals = tuple(np.asarray(c, dtype=np.int64) for c in marginals)
    k = resolve_k(method, attrs, len(qids))
    check_marginals(marginals, qids)
    if method == "enhanced":
        if p != "uniform":
            raise FedanonError(
                "--p applies to --method ra only (enhanced RA picks its k attributes uniformly)"
            )
        return Plan(qids, marginals, method, None, k)
    return Plan(qids, marginals, method, attribute_probabilities(p, marginals, qids), 1)


def split_histograms(vector: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    """The concatenated histogram vector of a secure sum, cut back into one per QID."""
    if int(np.sum(sizes)) != vector.size:
        raise FedanonError(
            f"histogram vector has {vector.size} counts, the domains {int(np.sum(sizes))}"
        )
    return [part.astype(np.int64) for part in np.split(vector, np.cumsum(sizes)[:-1])]
