"""Record suppression for the LKC engine: a budget of records that may leave the groups.

ARX's reading of a suppression limit: records in groups that violate the privacy model are
suppressed, as long as at most a given share of the table is. In fedanon the groups are the
partitions of T_g (the engine only offers a budget when the single QID subset of size
min(L, |QID|) is the whole QID, so every group is one partition and removing a group changes
no other group). The greedy search uses the budget like this (docs/lkc.md, "Record
suppression"):

* a partition is *violating* when it has fewer than K records or a sensitive share above C;
* the records of the violating partitions of the current cut are the suppressed ones;
* a candidate x is valid when the suppressed count after specializing x stays within the
  budget. That count is today's plus ``delta(x) = sum over p on Link_x of (records of p's
  violating children - records of p if p violates)``, which this module computes per
  partition and attribute from the hypothetical child counts the engine already has, so the
  distributed mode needs no extra message: the leader derives it from the secure sums.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from fedanon.shares import parse_share

SUPPRESSED_MODES = ("root", "drop")


def parse_suppression_share(value: float | str | Fraction | None) -> Fraction:
    """The budget as an exact share in [0, 1): ``0.02``, ``2%`` or ``1/50`` (None means 0)."""
    if value is None:
        return Fraction(0)
    return parse_share(value, name="--suppress", forms="a share like 0.02 or 2%", bounds="[0, 1)")


def budget_records(share: Fraction, records: int) -> int:
    """How many records the budget allows: floor(share x records), exact."""
    return int(share * records)


def violating(
    stats: np.ndarray, K: int, C: Fraction, sens_from: int, n_sensitive: int
) -> np.ndarray:
    """Boolean per group (last axis = channels): non-empty and below K or above C."""
    size = stats[..., 0]
    bad = size < K
    for j in range(n_sensitive):
        bad |= stats[..., sens_from + j] * C.denominator > C.numerator * size
    return bad & (size > 0)


def suppression_measures(
    stats: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    K: int,
    C: Fraction,
    sens_from: int,
    n_sensitive: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per partition and attribute, if the partition were split into that attribute's
    children (slots ``starts[j]:ends[j]`` of `stats`, partitions x slots x channels; slot 0 is
    the partition itself):

    * the discernibility reduction over the groups that stay, |p|^2 - sum_c |p_c|^2 with a
      suppressed group counting 0 (the suppressed records' own group is charged separately by
      the engine, from the change of the suppressed count, because every partition shares it);
    * the suppression delta: records suppressed after the split minus before.

    Every slot is judged against K and C once, and running sums over the slots give every
    attribute's sums at once (exact in int64).
    """
    size = stats[..., 0].astype(np.int64)
    bad = violating(stats, K, C, sens_from, n_sensitive)
    suppressed = np.where(bad, size, 0)
    kept = np.where(bad, 0, size * size)
    zero = np.zeros((size.shape[0], 1), dtype=np.int64)
    run_suppressed = np.concatenate([zero, suppressed.cumsum(axis=1)], axis=1)
    run_kept = np.concatenate([zero, kept.cumsum(axis=1)], axis=1)
    reduction = kept[:, :1] - (run_kept[:, ends] - run_kept[:, starts])
    delta = (run_suppressed[:, ends] - run_suppressed[:, starts]) - suppressed[:, :1]
    return reduction, delta
