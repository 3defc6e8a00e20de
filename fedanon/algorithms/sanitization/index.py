"""The inverted file: for every sensitive rule the transactions that contain all its items.

Built in one pass over the entries of the log that carry a rule item (postings per item, then
one sorted intersection per rule), so its cost grows with the log once, not once per rule.
`degree[t]` is the number of sensitive rules transaction t contains (Heuristic 1 sorts by it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

import numpy as np

from fedanon.algorithms.sanitization.rules import SensitiveRule
from fedanon.utility.transactions import Transactions


@dataclass(frozen=True)
class InvertedIndex:
    """`tids[r]`: ascending ids of the transactions containing rule r; `degree` per transaction."""

    tids: list[np.ndarray]
    degree: np.ndarray

    @classmethod
    def build(cls, tx: Transactions, rules: Sequence[SensitiveRule]) -> InvertedIndex:
        rule_items = np.unique(np.fromiter((i for r in rules for i in r.itemset), dtype=np.int64))
        hit = np.isin(tx.items, rule_items)
        items, rows = tx.items[hit], tx.row_ids()[hit]
        order = np.argsort(items, kind="stable")  # rows stay ascending within an item
        items, rows = items[order], rows[order]
        bounds = (
            np.searchsorted(items, rule_items, side="left"),
            np.searchsorted(items, rule_items, side="right"),
        )
        postings = {
            int(item): rows[start:stop]
            for item, start, stop in zip(rule_items, *bounds, strict=True)
        }
        tids = [
            reduce(
                lambda a, b: np.intersect1d(a, b, assume_unique=True),
                (postings[item] for item in rule.items),
            )
            for rule in rules
        ]
        degree = np.zeros(len(tx), dtype=np.int64)
        for rule_tids in tids:
            degree[rule_tids] += 1
        return cls(tids, degree)


def to_sanitize(n_sensitive: int, psi: float) -> int:
    """NumTrans = ceil(n (1 - psi)): how many of a rule's sensitive transactions to alter."""
    return int(np.ceil(n_sensitive * (1.0 - psi) - 1e-9))
