"""The record holder's half: local histograms over the agreed domains, local randomization.

A hospital never sends a record before it is randomized: it contributes its per-QID histograms
(to a secure sum in a federation) and, once the plan with the global marginals comes back,
randomizes its own rows. Draws from the global marginal make each party's output distributed
exactly as the same rows in a centralized run over the union.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from fedanon.algorithms.randomization.coding import CodedQIDs, decode, encode
from fedanon.algorithms.randomization.leader_half import Plan
from fedanon.algorithms.randomization.sampler import randomize_codes
from fedanon.errors import FedanonError


class LocalRecords:
    """One holder's table coded over the agreed domains."""

    def __init__(
        self,
        table: pd.DataFrame,
        qids: Sequence[str],
        domains: Sequence[Sequence[str]] | None = None,
    ) -> None:
        self.table = table
        self.coded: CodedQIDs = encode(table, qids, domains)

    @property
    def sizes(self) -> list[int]:
        return [len(d) for d in self.coded.domains]

    def histograms(self) -> list[np.ndarray]:
        return self.coded.histograms()

    def histogram_vector(self) -> np.ndarray:
        """All QID histograms concatenated in QID order (the secure sum's input), uint64."""
        return np.concatenate(self.histograms()).astype(np.uint64)

    def randomize(self, plan: Plan, rng: np.random.Generator) -> tuple[pd.DataFrame, int]:
        """The randomized table (every non-QID column untouched) and its changed cell count."""
        if plan.qids != self.coded.qids:
            raise FedanonError(
                f"plan QIDs {list(plan.qids)} differ from this table's {list(self.coded.qids)}"
            )
        for column, counts, size in zip(plan.qids, plan.marginals, self.sizes, strict=True):
            if counts.size != size:
                raise FedanonError(
                    f"column '{column}': marginal over {counts.size} values, domain of {size}"
                )
        codes = randomize_codes(self.coded.codes, plan.marginals, plan.method, rng, plan.p, plan.k)
        changed = int(np.count_nonzero(codes != self.coded.codes))
        return decode(self.table, self.coded, codes), changed
