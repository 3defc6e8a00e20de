"""Validity of candidate specializations under LKC-privacy, from partition statistics.

A candidate x on attribute A is valid iff, after specializing x, every group of every QID subset
Q of size min(L, |QID|) containing A has at least K records and a share of at most C of each
sensitive value. Those groups are the buckets (child c of x, projection on Q minus A) summed over
the partitions on Link_x, which the hypothetical child counts of each partition give directly.

Only buckets made of partitions created by the last specialization can have changed, so the
engine checks (a) new candidates over every subset and (b) surviving candidates only over the
subsets that also contain the attribute just specialized, in both cases over the new partitions
alone. Comparisons are exact integers: ``sens * den > num * size`` with C = num/den.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedanon.algorithms.tds.grouping import dense_ranks, group_chunks, subsets_with
from fedanon.schema import LKCParams


@dataclass
class GroupExtremes:
    """The smallest group and the highest confidence per sensitive value over checked groups."""

    min_size: int
    max_confidence: list[float]


class Validator:
    """Checks buckets of candidate specializations against L, K and C."""

    def __init__(self, n_qids: int, params: LKCParams, n_class: int, n_sensitive: int) -> None:
        self.n_qids = n_qids
        self.params = params
        self.subset_size = min(params.L, n_qids)
        self.sens_from = 1 + n_class
        self.n_sensitive = n_sensitive

    def _bad(self, size: np.ndarray, sens: np.ndarray) -> np.ndarray:
        """Boolean per group: violates K or C (sizes of empty groups never occur here)."""
        bad = size < self.params.K
        num, den = self.params.C.numerator, self.params.C.denominator
        for j in range(sens.shape[1]):
            bad |= sens[:, j] * den > num * size
        return bad

    def violating_nodes(
        self,
        keys: np.ndarray,
        slot_stats: np.ndarray,
        attr: int,
        required: tuple[int, ...],
        rows: np.ndarray,
    ) -> np.ndarray:
        """Candidate nodes of `attr` (values of ``keys[rows, attr]``) that some bucket invalidates.

        `keys` are partition keys, `slot_stats` the partitions' child slots for `attr`
        (partitions x width x channels); only subsets containing `attr` and all of `required`
        are checked, over the partitions `rows`.
        """
        others_fixed = tuple(a for a in required if a != attr)
        free = subsets_with(self.n_qids, self.subset_size, (attr, *others_fixed))
        if rows.size == 0 or free.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        subset_cols = _with_fixed(free, others_fixed)
        stats = slot_stats[rows]
        row_idx, slot_idx = np.nonzero(stats[:, :, 0] > 0)
        if row_idx.size == 0:
            return np.zeros(0, dtype=np.int64)
        counts = stats[row_idx, slot_idx, 0].astype(np.float64)
        sens = stats[row_idx, slot_idx, self.sens_from : self.sens_from + self.n_sensitive]
        part_keys = keys[rows][row_idx]
        ranks, radix = dense_ranks(part_keys)
        width = stats.shape[1]
        base = ranks[:, attr] * width + slot_idx
        base_radix = int(radix[attr]) * width
        bad_row = np.zeros(row_idx.size, dtype=bool)
        for chunk in group_chunks(base, base_radix, ranks, radix, subset_cols):
            flat = chunk.inverse.reshape(-1)
            size = np.bincount(
                flat, weights=np.repeat(counts, chunk.subset_ids.size), minlength=chunk.n_groups
            ).astype(np.int64)
            sens_sum = (
                np.stack(
                    [
                        np.bincount(
                            flat,
                            weights=np.repeat(sens[:, j].astype(np.float64), chunk.subset_ids.size),
                            minlength=chunk.n_groups,
                        ).astype(np.int64)
                        for j in range(self.n_sensitive)
                    ],
                    axis=1,
                )
                if self.n_sensitive
                else np.zeros((chunk.n_groups, 0), dtype=np.int64)
            )
            bad_group = self._bad(size, sens_sum)
            bad_row |= bad_group[chunk.inverse].any(axis=1)
        return np.unique(part_keys[bad_row, attr]).astype(np.int64)

    def group_extremes(
        self, keys: np.ndarray, own: np.ndarray, required: tuple[int, ...] = ()
    ) -> GroupExtremes:
        """Min group size and max confidence over subsets of size min(L, |QID|) ⊇ `required`.

        The engine calls it on the partitions a specialization created, with `required` = the
        specialized attribute: those are exactly the groups that changed.
        """
        subset_cols = _with_fixed(subsets_with(self.n_qids, self.subset_size, required), required)
        ranks, radix = dense_ranks(keys)
        base = np.zeros(keys.shape[0], dtype=np.int64)
        counts = own[:, 0].astype(np.float64)
        min_size = int(own[:, 0].sum())
        max_conf = [0.0] * self.n_sensitive
        for chunk in group_chunks(base, 1, ranks, radix, subset_cols):
            flat = chunk.inverse.reshape(-1)
            reps = chunk.subset_ids.size
            size = np.bincount(flat, weights=np.repeat(counts, reps), minlength=chunk.n_groups)
            min_size = min(min_size, int(size.min()))
            for j in range(self.n_sensitive):
                s = np.bincount(
                    flat,
                    weights=np.repeat(own[:, self.sens_from + j].astype(float), reps),
                    minlength=chunk.n_groups,
                )
                max_conf[j] = max(max_conf[j], float((s / size).max()))
        return GroupExtremes(min_size=min_size, max_confidence=max_conf)


def _with_fixed(free: np.ndarray, fixed: tuple[int, ...]) -> np.ndarray:
    """Prepend the always-present attributes `fixed` to every subset row of `free`."""
    return np.hstack([np.tile(np.array(fixed, dtype=np.int64), (free.shape[0], 1)), free])
