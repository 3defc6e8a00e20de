"""Heuristic 1 (RRA, RA, IGA): sanitize each rule's highest-degree transactions first.

Per rule, its sensitive transactions are sorted by descending degree (ties: ascending id) and
the first NumTrans = ceil(|T[r]| (1 - psi)) of them lose one victim item of the rule. The three
algorithms differ only in the victim:

- RRA takes turns: the j-th selected transaction of a rule with sorted items i_1..i_k loses
  i_((j-1) mod k + 1);
- RA draws a uniformly random item of the rule for each selected transaction (seeded);
- IGA fixes one victim per rule by greedy grouping: the item contained in most of the remaining
  rules (ties: lowest support in D, then lowest id) becomes the victim of all those rules, which
  leave the pool; repeated until every rule has a victim, so a rule sharing nothing ends with its
  own lowest-support item.
A transaction's victims form a set: two rules choosing the same item delete it once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedanon.algorithms.sanitization.index import InvertedIndex, to_sanitize
from fedanon.algorithms.sanitization.rules import SensitiveRule
from fedanon.utility.transactions import Transactions

Victims = tuple[np.ndarray, np.ndarray]  # (transaction ids, items), one entry per deletion


def selected_transactions(index: InvertedIndex, rule: int, psi: float) -> np.ndarray:
    """The rule's transactions to sanitize, highest degree first, ties by ascending id."""
    tids = index.tids[rule]
    order = np.lexsort((tids, -index.degree[tids]))
    return tids[order][: to_sanitize(len(tids), psi)]


def round_robin_victims(
    index: InvertedIndex, rules: Sequence[SensitiveRule], psi: float
) -> Victims:
    """RRA: the rule's items in turn over its selected transactions."""
    parts = []
    for r, rule in enumerate(rules):
        chosen = selected_transactions(index, r, psi)
        items = np.asarray(rule.items, dtype=np.int64)
        parts.append((chosen, items[np.arange(len(chosen)) % len(items)]))
    return _concat(parts)


def random_victims(
    index: InvertedIndex, rules: Sequence[SensitiveRule], psi: float, rng: np.random.Generator
) -> Victims:
    """RA: a uniformly random item of the rule for each selected transaction."""
    parts = []
    for r, rule in enumerate(rules):
        chosen = selected_transactions(index, r, psi)
        items = np.asarray(rule.items, dtype=np.int64)
        parts.append((chosen, items[rng.integers(len(items), size=len(chosen))]))
    return _concat(parts)


def item_grouping_victims(
    index: InvertedIndex, rules: Sequence[SensitiveRule], psi: float, support: dict[int, int]
) -> Victims:
    """IGA: one victim per rule from greedy grouping, deleted from all its selected transactions."""
    victim = group_victims(rules, support)
    parts = []
    for r in range(len(rules)):
        chosen = selected_transactions(index, r, psi)
        parts.append((chosen, np.full(len(chosen), victim[r], dtype=np.int64)))
    return _concat(parts)


def group_victims(rules: Sequence[SensitiveRule], support: dict[int, int]) -> list[int]:
    """The IGA victim of each rule: repeatedly the item shared by most rules still ungrouped."""
    victim: list[int | None] = [None] * len(rules)
    remaining = set(range(len(rules)))
    while remaining:
        shared: dict[int, int] = {}
        for r in remaining:
            for item in rules[r].itemset:
                shared[item] = shared.get(item, 0) + 1
        label = min(shared, key=lambda item: (-shared[item], support.get(item, 0), item))
        group = {r for r in remaining if label in rules[r].itemset}
        for r in group:
            victim[r] = label
        remaining -= group
    return [int(v) for v in victim if v is not None]


def _concat(parts: list[tuple[np.ndarray, np.ndarray]]) -> Victims:
    if not parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def support_in(tx: Transactions, items: set[int]) -> dict[int, int]:
    """Support in D of the given items (IGA's tie-break); absent items count 0."""
    counts = tx.item_counts()
    return {item: counts.get(item, 0) for item in items}
