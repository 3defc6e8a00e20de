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

import functools
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
        # Confidence C >= 1 bounds nothing (a share never exceeds 1): skip its sums.
        self.confidence_bounded = n_sensitive > 0 and params.C < 1
        # The whole QID is the one subset: live partitions have distinct keys, so every bucket
        # is one partition's child and no grouping is needed (k-anonymity and its kin).
        self.whole_qid = self.subset_size == n_qids

    def _bad(self, size: np.ndarray, sens: np.ndarray) -> np.ndarray:
        """Boolean per group: violates K or C (sizes of empty groups never occur here);
        `sens` holds one more axis than `size`, the sensitive values."""
        bad = size < self.params.K
        num, den = self.params.C.numerator, self.params.C.denominator
        for j in range(sens.shape[-1]):
            bad |= sens[..., j] * den > num * size
        return bad

    def violating_nodes(
        self,
        keys: np.ndarray,
        slot_stats: np.ndarray,
        attr: int,
        required: tuple[int, ...],
    ) -> np.ndarray:
        """Candidate nodes of `attr` (values of ``keys[:, attr]``) that some bucket invalidates.

        `keys` are the checked partitions' keys, `slot_stats` their child slots for `attr`
        (partitions x width x channels); only subsets containing `attr` and all of `required`
        are checked.
        """
        others_fixed = tuple(a for a in required if a != attr)
        subset_cols = _subset_columns(
            self.n_qids, self.subset_size, (attr, *others_fixed), others_fixed
        )
        if keys.shape[0] == 0 or subset_cols.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        stats = slot_stats
        row_idx, slot_idx = np.nonzero(stats[:, :, 0] > 0)
        if row_idx.size == 0:
            return np.zeros(0, dtype=np.int64)
        counts = stats[row_idx, slot_idx, 0]
        sens = stats[row_idx, slot_idx, self.sens_from : self.sens_from + self.n_sensitive]
        part_keys = keys[row_idx]
        # A group is a sum of elements, and a sum of elements that each pass K and C passes
        # too: only candidates with an element that fails on its own can be invalidated.
        suspect = np.unique(part_keys[self._bad(counts, sens), attr])
        if suspect.size == 0:
            return suspect.astype(np.int64)
        mine = np.isin(part_keys[:, attr], suspect)
        counts, sens, part_keys, slot_idx = (
            counts[mine].astype(np.float64),
            sens[mine],
            part_keys[mine],
            slot_idx[mine],
        )
        ranks, radix = dense_ranks(part_keys)
        width = stats.shape[1]
        base = ranks[:, attr] * width + slot_idx
        base_radix = int(radix[attr]) * width
        bad_row = np.zeros(counts.size, dtype=bool)
        for chunk in group_chunks(base, base_radix, ranks, radix, subset_cols):
            flat, reps = chunk.ids.reshape(-1), chunk.subset_ids.size
            size = np.bincount(flat, weights=np.tile(counts, reps), minlength=chunk.n_groups)
            sens_sum = np.zeros((chunk.n_groups, 0), dtype=np.int64)
            if self.confidence_bounded:
                sens_sum = np.stack(
                    [
                        np.bincount(
                            flat,
                            weights=np.tile(sens[:, j].astype(np.float64), reps),
                            minlength=chunk.n_groups,
                        ).astype(np.int64)
                        for j in range(self.n_sensitive)
                    ],
                    axis=1,
                )
            # Ids of empty groups are never looked up, so their (size 0) verdict is unused.
            bad_group = self._bad(size.astype(np.int64), sens_sum)
            bad_row |= bad_group[chunk.ids].any(axis=0)
        return np.unique(part_keys[bad_row, attr]).astype(np.int64)

    def bad_children(self, stats: np.ndarray) -> np.ndarray:
        """(partitions, slots) booleans: the slot is a non-empty child that fails K or C on
        its own (slot 0, the partition itself, included; callers read the children slots).

        With the whole QID as the one subset (:attr:`whole_qid`) these are exactly the buckets
        that invalidate a candidate, for every attribute at once.
        """
        size = stats[..., 0]
        sens = stats[..., self.sens_from : self.sens_from + self.n_sensitive]
        return self._bad(size, sens) & (size > 0)

    def group_extremes(
        self, keys: np.ndarray, own: np.ndarray, required: tuple[int, ...] = ()
    ) -> GroupExtremes:
        """Min group size and max confidence over subsets of size min(L, |QID|) ⊇ `required`.

        The engine calls it on the partitions a specialization created, with `required` = the
        specialized attribute: those are exactly the groups that changed.
        """
        subset_cols = _subset_columns(self.n_qids, self.subset_size, required, required)
        ranks, radix = dense_ranks(keys)
        base = np.zeros(keys.shape[0], dtype=np.int64)
        min_size = int(own[:, 0].sum())
        max_conf = [0.0] * self.n_sensitive
        channels = [0] + [self.sens_from + j for j in range(self.n_sensitive)]
        packs = _packed_weights(own[:, channels], min_size)
        for chunk in group_chunks(base, 1, ranks, radix, subset_cols):
            flat = chunk.ids.reshape(-1)
            reps = chunk.subset_ids.size
            sums = _unpacked_sums(flat, reps, chunk.n_groups, packs)
            present = sums[0] > 0  # partitions are never empty: the groups that exist
            size = sums[0][present]
            min_size = min(min_size, int(size.min()))
            for j in range(self.n_sensitive):
                s = sums[1 + j][present]
                max_conf[j] = max(max_conf[j], float((s / size).max()))
        return GroupExtremes(min_size=min_size, max_confidence=max_conf)


@dataclass
class _Pack:
    """Count columns summed by one float64 bincount: column k shifted up by k * bits."""

    weights: np.ndarray
    columns: int
    bits: int


def _packed_weights(counts: np.ndarray, total: int) -> list[_Pack]:
    """Pack the columns of `counts` (non-negative, each column summing to at most `total`)
    into as few float64 weight vectors as keep every group sum exact (below 2^52).

    Summing a group's size and sensitive counts is one bincount per pack instead of one per
    column: at 1M records (20 bits) two columns share one, on small tables three or more.
    """
    bits = max(1, int(total).bit_length())
    per = max(1, 52 // bits)
    packs: list[_Pack] = []
    for first in range(0, counts.shape[1], per):
        part = counts[:, first : first + per].astype(np.int64)
        shifts = np.arange(part.shape[1], dtype=np.int64) * bits
        packed = (part << shifts[None, :]).sum(axis=1)
        packs.append(_Pack(packed.astype(np.float64), part.shape[1], bits))
    return packs


def _unpacked_sums(
    flat: np.ndarray, reps: int, n_groups: int, packs: list[_Pack]
) -> list[np.ndarray]:
    """Per packed column, its sums over the groups `flat` (ids of `reps` tiled rows)."""
    out: list[np.ndarray] = []
    for pack in packs:
        summed = np.bincount(flat, weights=np.tile(pack.weights, reps), minlength=n_groups)
        packed = summed.astype(np.int64)
        mask = (1 << pack.bits) - 1
        out += [(packed >> (k * pack.bits)) & mask for k in range(pack.columns)]
    return out


@functools.cache
def _subset_columns(
    n_qids: int, size: int, required: tuple[int, ...], fixed: tuple[int, ...]
) -> np.ndarray:
    """Subsets of `size` containing `required`, as rows of columns: `fixed` first, then the
    subset's other members. Cached: a run asks for the same lists every step (read-only)."""
    free = subsets_with(n_qids, size, required)
    cols = np.hstack([np.tile(np.array(fixed, dtype=np.int64), (free.shape[0], 1)), free])
    cols.flags.writeable = False
    return cols
