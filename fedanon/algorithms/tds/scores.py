"""Scores of candidate specializations (paper, section 3.2).

* ``infogain`` (classification analysis): E(T[v]) - sum_c |T[c]|/|T[v]| E(T[c]) with E the class
  entropy in bits. It depends only on the counts of v and its children, so it is computed once
  when v enters the cut.
* ``discernibility`` (general analysis): the *reduction* a specialization brings to the
  discernibility cost, sum over the partitions p on Link_v of |p|^2 - sum_c |p_c|^2 (how the
  records of each full-QID group would be split). It is kept per candidate and updated as
  partitions are split, and maximized. The paper's literal pre-split sum would ignore how v
  splits; docs/lkc.md states this choice.
"""

from __future__ import annotations

import numpy as np

SCORES = ("infogain", "discernibility")


def entropy_bits(counts: np.ndarray) -> np.ndarray:
    """Class entropy in bits of each row of `counts` (rows of class counts); 0 for empty rows."""
    counts = np.atleast_2d(np.asarray(counts, dtype=np.float64))
    total = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(total > 0, counts / total, 0.0)
        terms = np.where(p > 0, -p * np.log2(p), 0.0)
    return terms.sum(axis=1)


def info_gain(parent_classes: np.ndarray, child_classes: np.ndarray) -> float:
    """InfoGain of splitting a node with class counts `parent_classes` into `child_classes`."""
    total = float(np.sum(parent_classes))
    if total <= 0:
        return 0.0
    child_sizes = child_classes.sum(axis=1)
    gain = float(entropy_bits(parent_classes)[0]) - float(
        np.sum(child_sizes / total * entropy_bits(child_classes))
    )
    return max(gain, 0.0)


def discernibility_reductions(
    sizes: np.ndarray, slot_sizes: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> np.ndarray:
    """Per partition and attribute: |p|^2 - sum_c |p_c|^2 (exact in int64).

    `slot_sizes` holds every slot's record count (partitions x slots); attribute j's children
    are slots ``starts[j]:ends[j]``. Running sums of the squares give every attribute's sum
    at once (an attribute without children gets |p|^2 - 0).
    """
    sizes = sizes.astype(np.int64)
    squares = slot_sizes.astype(np.int64) ** 2
    running = np.concatenate([np.zeros((squares.shape[0], 1), np.int64), squares.cumsum(axis=1)], 1)
    return (sizes * sizes)[:, None] - (running[:, ends] - running[:, starts])


def best_binary_split(hist: np.ndarray) -> int | None:
    """Dynamic numerical split: the atom index starting the right part that maximizes InfoGain.

    `hist` holds class counts per distinct value (ascending). Returns None when no split has a
    positive gain (the node becomes a leaf), including when only one distinct value is present.
    """
    present = np.flatnonzero(hist.sum(axis=1) > 0)
    if present.size < 2:
        return None
    h = hist[present].astype(np.float64)
    left = np.cumsum(h, axis=0)[:-1]
    total = h.sum(axis=0)
    right = total - left
    n = total.sum()
    nl, nr = left.sum(axis=1), right.sum(axis=1)
    after = (nl * entropy_bits(left) + nr * entropy_bits(right)) / n
    gains = float(entropy_bits(total[None, :])[0]) - after
    best = int(np.argmax(gains))
    if gains[best] <= 1e-12:
        return None
    return int(present[best + 1])
