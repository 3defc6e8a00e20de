"""Python entry points: `sanitize` a log (or its patterns) and `evaluate_sanitization`.

`sanitize(log, rules=, algorithm=, psi=)` runs one of the thesis's algorithms: the data-sharing
ones (iga, rra, ra, swa) release the sanitized log D' (same number of transactions, each a
subset of its original); the pattern-sharing one (dsa) releases the frequent itemsets of D at
`min_support`. Either comes as a `Release` whose table is described in
`fedanon.algorithms.sanitization.tables`. `evaluate_sanitization` mines D and D' (or the
released itemsets) with the same miner and thresholds and computes HF, MC, AP, Dif and SEF.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedanon.algorithms.sanitization.deletion import delete_items
from fedanon.algorithms.sanitization.dsa import downright_sanitize
from fedanon.algorithms.sanitization.heuristic1 import (
    item_grouping_victims,
    random_victims,
    round_robin_victims,
    support_in,
)
from fedanon.algorithms.sanitization.index import InvertedIndex
from fedanon.algorithms.sanitization.metrics import dif, rule_metrics
from fedanon.algorithms.sanitization.rules import (
    SensitiveRule,
    parse_rules,
    require_items_present,
)
from fedanon.algorithms.sanitization.swa import sliding_window_victims
from fedanon.algorithms.sanitization.tables import (
    LogSpec,
    as_log,
    is_itemsets_table,
    itemsets_of,
    itemsets_table,
    log_table,
)
from fedanon.arguments import optional_seed
from fedanon.errors import FedanonError
from fedanon.release import Release
from fedanon.utility.miner import (
    MAX_ITEMSETS,
    Itemsets,
    Rule,
    frequent_itemsets,
    mine_rules,
    rules_of,
)
from fedanon.utility.transactions import Transactions

DATA_SHARING = ("iga", "rra", "ra", "swa")
ALGORITHMS = (*DATA_SHARING, "dsa")
DEFAULT_WINDOW = 50_000  # the thesis's SWA window for all its experiments (section 7.2.3)


def sanitize(
    transactions: LogSpec,
    *,
    rules: Sequence[SensitiveRule | str] | str,
    algorithm: str,
    psi: float | Sequence[float] = 0.0,
    window: int | None = None,
    seed: int | None = None,
    min_support: float | None = None,
    max_itemsets: int = MAX_ITEMSETS,
) -> Release:
    """Hide the sensitive `rules` (``"1 => 2"`` text or `SensitiveRule`) in a transaction log.

    `psi` is the share of each rule's sensitive transactions left untouched (one per rule, a
    list, only for swa, whose `window` is its batch size); dsa needs `min_support`. `seed` fixes
    RA's and SWA's random victims and DSA's random pairs; without it they come from a 128-bit
    secret seed, so nobody can replay which item was deleted where. Mining for dsa stops with
    an error past `max_itemsets` frequent itemsets (fedanon.utility.miner.frequent_itemsets).
    """
    tx, rules = as_log(transactions), as_rules(rules)
    algorithm = str(algorithm).lower()
    psis = _check(tx, rules, algorithm, psi, window, min_support)
    seed = optional_seed(seed)
    rng = np.random.default_rng(secrets.randbits(128) if seed is None else seed)
    given = {
        "algorithm": algorithm,
        "psi": [float(psi)] if isinstance(psi, int | float) else [float(p) for p in psi],
        "seeded": seed is not None,
    }
    if algorithm == "dsa":
        assert min_support is not None
        itemsets = frequent_itemsets(tx, min_support, max_itemsets)
        released, marked = downright_sanitize(itemsets, rules, rng)
        report = {
            "itemsets_original": len(itemsets),
            "itemsets_released": len(released),
            "marked_pairs": len(marked),
        }
        return Release(itemsets_table(released), given | _report(tx, rules, report))
    index = InvertedIndex.build(tx, rules)
    if algorithm == "swa":
        tids, items = sliding_window_victims(tx, index, rules, psis, window or DEFAULT_WINDOW, rng)
    elif algorithm == "rra":
        tids, items = round_robin_victims(index, rules, psis[0])
    elif algorithm == "ra":
        tids, items = random_victims(index, rules, psis[0], rng)
    else:
        support = support_in(tx, {i for rule in rules for i in rule.itemset})
        tids, items = item_grouping_victims(index, rules, psis[0], support)
    released_tx = delete_items(tx, tids, items)
    report = {
        "sensitive_transactions": int(np.count_nonzero(index.degree)),
        "deletions": len(tx.items) - len(released_tx.items),
        "transactions_touched": int(np.count_nonzero(tx.lengths() != released_tx.lengths())),
    }
    if algorithm == "swa":
        report["window"] = window or DEFAULT_WINDOW
    table = log_table(released_tx)
    if isinstance(transactions, pd.DataFrame):  # row i is transaction i: keep its label
        table.index = transactions.index
    return Release(table, given | _report(tx, rules, report), preserves_order=True)


def evaluate_sanitization(
    original: LogSpec,
    *,
    sanitized: Release | LogSpec | Itemsets,
    rules: Sequence[SensitiveRule | str] | str,
    min_support: float,
    min_confidence: float = 0.6,
    rule_support: str = "itemset",
    original_rules: Sequence[Rule] | None = None,
    max_itemsets: int = MAX_ITEMSETS,
) -> dict[str, Any]:
    """HF, MC, AP, SEF (and Dif for a sanitized log) at one sigma and phi for D and D'.

    `sanitized` is a `Release` of `sanitize`, a log, or DSA's released itemsets.
    `rule_support` picks the rule definition of `fedanon.utility.miner` for both D and D'.
    `original_rules` may pass the rules of D mined earlier with the same settings, so a sweep
    over algorithms and thresholds mines D once. Each mining stops with an error past
    `max_itemsets` frequent itemsets.
    """
    original, rules = as_log(original, "original"), as_rules(rules)
    if isinstance(sanitized, Release):
        sanitized = sanitized.table
    if is_itemsets_table(sanitized):
        sanitized = itemsets_of(sanitized)
    elif not isinstance(sanitized, dict):
        sanitized = as_log(sanitized, "sanitized")
    before = (
        list(original_rules)
        if original_rules is not None
        else mine_rules(original, min_support, min_confidence, rule_support, max_itemsets)
    )
    if isinstance(sanitized, Transactions):
        if len(sanitized) != len(original):
            raise FedanonError(
                f"the sanitized log has {len(sanitized)} transactions, the original "
                f"{len(original)}: sanitization never drops a transaction"
            )
        after = mine_rules(sanitized, min_support, min_confidence, rule_support, max_itemsets)
        difference = dif(original, sanitized)
    else:
        after = rules_of(sanitized, len(original), min_support, min_confidence, rule_support)
        difference = None
    return {
        **rule_metrics(before, after, rules),
        "dif": difference,
        "min_support": min_support,
        "min_confidence": min_confidence,
        "rule_support": rule_support,
        "transactions": len(original),
    }


def as_rules(rules: Sequence[SensitiveRule | str] | str) -> list[SensitiveRule]:
    """Sensitive rules given as objects, as ``"X => Y"`` lines, or as one rules-file text."""
    if isinstance(rules, str):
        return parse_rules(rules, "rules")
    out: list[SensitiveRule] = []
    for rule in rules:
        if isinstance(rule, SensitiveRule):
            out.append(rule)
        elif isinstance(rule, str):
            out.extend(parse_rules(rule, "rules"))
        else:
            raise FedanonError(f"a rule must be 'X => Y' text or a SensitiveRule, got {rule!r}")
    return out


def _check(
    tx: Transactions,
    rules: Sequence[SensitiveRule],
    algorithm: str,
    psi: float | Sequence[float],
    window: int | None,
    min_support: float | None,
) -> list[float]:
    if algorithm not in ALGORITHMS:
        raise FedanonError(f"unknown algorithm '{algorithm}' (one of {', '.join(ALGORITHMS)})")
    if not rules:
        raise FedanonError("no sensitive rule to hide")
    try:
        psis = (
            [float(psi)] * len(rules) if isinstance(psi, int | float) else [float(p) for p in psi]
        )
    except (TypeError, ValueError):
        raise FedanonError(f"psi must be a number in [0, 1] or one per rule, got {psi!r}") from None
    if len(psis) != len(rules):
        raise FedanonError(f"{len(psis)} disclosure thresholds for {len(rules)} rules")
    if len(set(psis)) > 1 and algorithm != "swa":
        raise FedanonError("one disclosure threshold per rule is an SWA feature; give one psi")
    for value in psis:
        if not 0.0 <= value <= 1.0 or math.isnan(value):
            raise FedanonError(f"psi must be in [0, 1], got {value}")
    if window is not None and (algorithm != "swa" or window < 1):
        raise FedanonError("--window K is SWA's window size, a positive number of transactions")
    if algorithm == "dsa" and min_support is None:
        raise FedanonError("dsa sanitizes the frequent itemsets: give the minimum support")
    require_items_present(rules, tx)
    return psis


def _report(
    tx: Transactions, rules: Sequence[SensitiveRule], extra: dict[str, Any]
) -> dict[str, Any]:
    return {"transactions": len(tx), "sensitive_rules": [str(r) for r in rules], **extra}
