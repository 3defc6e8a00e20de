"""Heuristic 2, the Sliding Window Algorithm (SWA): shortest sensitive transactions first.

The log is read in windows of K consecutive transactions and each window is sanitized on its own
(one pass). Inside a window:

1. every sensitive transaction t gets, for each rule r it contains, a victim: the item of r that
   occurs in most of the rules t contains (ties: lowest support in the window, then lowest id);
   when that count is 1 (r shares no item with t's other rules) a uniformly random item of r
   (seeded);
2. per rule r, in the order given, its window transactions sorted by ascending length (ties:
   ascending id) and the first NumTrans_r = ceil(|T_w[r]| (1 - psi_r)) of them lose r's victim;
3. when psi_r = 0 the look-ahead runs after each deletion: every later rule that contains the
   victim and is contained in t drops t from its list, since t no longer supports it.

`psi` may be one threshold for all rules or one per rule (the thesis's mining permissions).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedanon.algorithms.sanitization.heuristic1 import Victims
from fedanon.algorithms.sanitization.index import InvertedIndex, to_sanitize
from fedanon.algorithms.sanitization.rules import SensitiveRule
from fedanon.utility.transactions import Transactions


def sliding_window_victims(
    tx: Transactions,
    index: InvertedIndex,
    rules: Sequence[SensitiveRule],
    psis: Sequence[float],
    window: int,
    rng: np.random.Generator,
) -> Victims:
    """SWA's deletions for the whole log, window after window."""
    lengths = tx.lengths()
    deleted_tids: list[int] = []
    deleted_items: list[int] = []
    for start in range(0, len(tx), window):
        stop = min(start + window, len(tx))
        local = [t[(t >= start) & (t < stop)] for t in index.tids]
        if not any(len(t) for t in local):
            continue
        victims = _window_victims(tx, rules, local, start, stop, rng)
        for tid, item in _sanitize_window(rules, psis, local, victims, lengths):
            deleted_tids.append(tid)
            deleted_items.append(item)
    return np.asarray(deleted_tids, dtype=np.int64), np.asarray(deleted_items, dtype=np.int64)


def _window_victims(
    tx: Transactions,
    rules: Sequence[SensitiveRule],
    local: list[np.ndarray],
    start: int,
    stop: int,
    rng: np.random.Generator,
) -> dict[tuple[int, int], int]:
    """Victim item per (rule, transaction) of the window (step 1)."""
    rules_of: dict[int, list[int]] = {}
    for r, tids in enumerate(local):
        for t in tids.tolist():
            rules_of.setdefault(t, []).append(r)
    window_items = tx.items[tx.indptr[start] : tx.indptr[stop]]
    rule_items = np.fromiter({i for rule in rules for i in rule.itemset}, dtype=np.int64)
    values, counts = np.unique(window_items[np.isin(window_items, rule_items)], return_counts=True)
    window_support = dict(zip(values.tolist(), counts.tolist(), strict=True))
    victims: dict[tuple[int, int], int] = {}
    for t in sorted(rules_of):
        in_t = rules_of[t]
        freq: dict[int, int] = {}
        for r in in_t:
            for item in rules[r].itemset:
                freq[item] = freq.get(item, 0) + 1
        for r in in_t:
            items = rules[r].items
            best = min(items, key=lambda i: (-freq[i], window_support.get(i, 0), i))
            if freq[best] == 1:
                best = items[int(rng.integers(len(items)))]
            victims[(r, t)] = best
    return victims


def _sanitize_window(
    rules: Sequence[SensitiveRule],
    psis: Sequence[float],
    local: list[np.ndarray],
    victims: dict[tuple[int, int], int],
    lengths: np.ndarray,
) -> list[tuple[int, int]]:
    """Steps 2 and 3: shortest transactions first, look-ahead when psi_r = 0."""
    dropped: set[tuple[int, int]] = set()
    deletions: list[tuple[int, int]] = []
    for r, tids in enumerate(local):
        order = np.lexsort((tids, lengths[tids]))
        queue = [t for t in tids[order].tolist() if (r, t) not in dropped]
        for t in queue[: to_sanitize(len(tids), psis[r])]:
            victim = victims[(r, t)]
            deletions.append((t, victim))
            if psis[r] == 0:
                for later in range(r + 1, len(rules)):
                    if victim in rules[later].itemset and (later, t) in victims:
                        dropped.add((later, t))
    return deletions
