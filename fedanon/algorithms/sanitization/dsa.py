"""Heuristic 3, the Downright Sanitizing Algorithm (DSA): sanitize the patterns, not the data.

DSA works on the frequent-itemset graph of D (all itemsets frequent at sigma, with their
supports). For each sensitive rule in turn its itemset c_i (level >= 1, at least two items):
if one of c_i's item pairs is already marked, nothing new is marked (that pair already breaks
c_i); otherwise a random pair of c_i is marked (seeded). Every itemset containing a marked pair
is then removed, which removes c_i and all its supersets (the backward-inference channel) and
one of its level-1 subsets (the forward-inference channel). The remaining itemsets are released
with their original supports; the graph stays downward closed, so rules mined from it are exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np

from fedanon.algorithms.sanitization.rules import SensitiveRule
from fedanon.utility.miner import Itemsets


def marked_pairs(rules: Sequence[SensitiveRule], rng: np.random.Generator) -> list[frozenset[int]]:
    """The pairs DSA marks, in the order the rules are given."""
    marked: list[frozenset[int]] = []
    for rule in rules:
        pairs = [frozenset(p) for p in combinations(rule.items, 2)]
        if not any(pair in marked for pair in pairs):
            marked.append(pairs[int(rng.integers(len(pairs)))])
    return marked


def downright_sanitize(
    itemsets: Itemsets, rules: Sequence[SensitiveRule], rng: np.random.Generator
) -> tuple[Itemsets, list[frozenset[int]]]:
    """The released itemsets (original supports) and the marked pairs that removed the rest."""
    marked = marked_pairs(rules, rng)
    released = {
        itemset: count
        for itemset, count in itemsets.items()
        if len(itemset) < 2 or not any(pair <= itemset for pair in marked)
    }
    return released, marked
