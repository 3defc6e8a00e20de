"""The thesis's sanitization metrics, computed from rules mined with one miner and thresholds.

R are the rules of D, R' those of D' (or, for DSA, those derivable from the released itemsets),
both from `fedanon.utility.miner` at the same sigma and phi. A rule is *sensitive* when its
itemset contains the itemset of a sensitive rule: knowing A,B,C => D reveals that A,B,D is
frequent. With S(X) and ~S(X) the sensitive and non-sensitive rules of X:

- HF = |S(R')| / |S(R)|                     hiding failure (None when D has no sensitive rule)
- MC = (|~S(R)| - |~S(R')|) / |~S(R)|       misses cost
- AP = (|R'| - |R n R'|) / |R'|             artifactual patterns, rules compared by (X, Y)
- Dif = sum_i (f_D(i) - f_D'(i)) / sum_i f_D(i)   over items (data sharing only)
- SEF = (|R| - (|R'| + |S(R)|)) / (|R| - |S(R)|)  side-effect factor

All values are fractions in [0, 1] (AP and MC are computed, never assumed). A denominator of 0
gives None: the measure is undefined, not perfect.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fedanon.algorithms.sanitization.rules import SensitiveRule
from fedanon.utility.miner import Rule
from fedanon.utility.transactions import Transactions


def is_sensitive(rule: Rule, sensitive_itemsets: Sequence[frozenset[int]]) -> bool:
    """True when the rule's itemset contains a sensitive rule's itemset."""
    itemset = rule.itemset
    return any(s <= itemset for s in sensitive_itemsets)


def rule_metrics(
    original: Sequence[Rule], sanitized: Sequence[Rule], rules: Sequence[SensitiveRule]
) -> dict[str, Any]:
    """HF, MC, AP and SEF from the rule sets of D and D', with the counts behind them."""
    sensitive = [rule.itemset for rule in rules]
    s_before = sum(is_sensitive(r, sensitive) for r in original)
    s_after = sum(is_sensitive(r, sensitive) for r in sanitized)
    ns_before, ns_after = len(original) - s_before, len(sanitized) - s_after
    common = len({r.key for r in original} & {r.key for r in sanitized})
    return {
        "hf": _ratio(s_after, s_before),
        "mc": _ratio(ns_before - ns_after, ns_before),
        "ap": _ratio(len(sanitized) - common, len(sanitized)),
        "sef": _ratio(len(original) - (len(sanitized) + s_before), len(original) - s_before),
        "rules_original": len(original),
        "rules_sanitized": len(sanitized),
        "sensitive_original": s_before,
        "sensitive_sanitized": s_after,
        "nonsensitive_original": ns_before,
        "nonsensitive_sanitized": ns_after,
        "rules_in_both": common,
    }


def dif(original: Transactions, sanitized: Transactions) -> float | None:
    """Dif(D, D'): histogram difference over the items of D, relative to D's total."""
    before = original.item_counts()
    after = sanitized.item_counts()
    removed = sum(count - after.get(item, 0) for item, count in before.items())
    return _ratio(removed, sum(before.values()))


def _ratio(numerator: int, denominator: int) -> float | None:
    return None if denominator == 0 else numerator / denominator
