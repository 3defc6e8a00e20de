"""Association-rule hiding (IGA, RRA, RA, SWA, DSA) and its metrics, as tables.

A transaction log is not a table of attributes, so the `Release` of a data-sharing algorithm
(iga, rra, ra, swa) holds the sanitized log as one row per transaction: column ``items`` is the
transaction's FIMI line (item numbers in ascending order separated by spaces, ``""`` for a
transaction that lost every item), in the original order. DSA shares patterns instead: its
table has one row per released frequent itemset, ``itemset`` (a FIMI line) and ``support``
(its count in the original log). Logs go in as a `Transactions`, a list of baskets of item
numbers, or such a table; rules as ``"1 => 2"`` strings or `SensitiveRule` objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from fedanon.api import Release
from fedanon.errors import FedanonError
from fedanon.public.arguments import optional_seed
from fedanon.utility.transactions import Transactions

#: A transaction log: the library's type, baskets of item numbers, or a released log table.
LogSpec = Transactions | Sequence[Iterable[int]] | pd.DataFrame


def sanitize(
    transactions: LogSpec,
    *,
    rules: Sequence[str] | Sequence[Any],
    algorithm: str,
    psi: float | Sequence[float] = 0.0,
    window: int | None = None,
    seed: int | None = None,
    min_support: float | None = None,
) -> Release:
    """Hide the sensitive `rules` with `algorithm` (docs/sanitization.md).

    `psi` is the share of each rule's sensitive transactions left untouched (one per rule only
    for swa, whose `window` is its batch size); dsa needs `min_support`. Without `seed` the
    random choices come from 128 secret bits.
    """
    from fedanon.algorithms.sanitization.api import sanitize as run

    psis = [float(x) for x in psi] if isinstance(psi, Sequence) else float(psi)
    out = run(
        as_log(transactions),
        _rules(rules),
        algorithm,
        psis,
        window=window,
        seed=optional_seed(seed),
        min_support=min_support,
    )
    report = {
        "algorithm": out.algorithm,
        "psi": psis if isinstance(psis, list) else [psis],
        "seeded": seed is not None,
        **out.report,
    }
    if out.transactions is not None:
        return Release(log_table(out.transactions), report)
    assert out.itemsets is not None  # dsa
    ordered = sorted(out.itemsets.items(), key=lambda kv: (len(kv[0]), sorted(kv[0])))
    table = pd.DataFrame(
        {
            "itemset": [" ".join(map(str, sorted(i))) for i, _ in ordered],
            "support": pd.Series([c for _, c in ordered], dtype="int64"),
        }
    )
    return Release(table, report)


def log_table(tx: Transactions) -> pd.DataFrame:
    """One row per transaction: its FIMI line in column ``items``."""
    return pd.DataFrame({"items": pd.Series(tx.to_fimi().split("\n")[:-1], dtype=object)})


def as_log(value: LogSpec, name: str = "transactions") -> Transactions:
    """The log as `Transactions`: given so, from baskets, or from a log table's ``items``."""
    if isinstance(value, Transactions):
        return value
    if isinstance(value, pd.DataFrame):
        if "items" not in value.columns:
            raise FedanonError(f"{name}: a log table needs the column 'items' (FIMI lines)")
        text = "".join(f"{line}\n" for line in value["items"].astype(str))
        return Transactions.parse_fimi(text.encode("ascii", "replace"), name)
    if isinstance(value, str | bytes):
        raise FedanonError(f"{name} must be a log (baskets of item numbers), got a string")
    try:
        return Transactions.from_lists(value)
    except (TypeError, ValueError):
        raise FedanonError(f"{name} must hold baskets of non-negative item numbers") from None


def _rules(rules: Sequence[Any]) -> list[Any]:
    from fedanon.algorithms.sanitization.rules import SensitiveRule, parse_rules

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


def evaluate_sanitization(
    original: LogSpec,
    *,
    sanitized: Release | LogSpec,
    rules: Sequence[str] | Sequence[Any],
    min_support: float,
    min_confidence: float = 0.6,
    rule_support: str = "itemset",
) -> dict[str, Any]:
    """HF (hiding failure), MC (misses cost), AP (artifactual patterns), Dif and SEF of a
    sanitized log (or of DSA's released itemsets) against the original, mined alike at
    `min_support` and `min_confidence`; `rule_support` is ``"itemset"`` or ``"antecedent"``.
    """
    from fedanon.algorithms.sanitization.api import evaluate_sanitization as run

    released: Any
    table = sanitized.table if isinstance(sanitized, Release) else sanitized
    if isinstance(table, pd.DataFrame) and "itemset" in table.columns:
        released = {
            frozenset(int(i) for i in str(text).split()): int(count)
            for text, count in zip(table["itemset"], table["support"], strict=True)
        }
    else:
        released = as_log(table, "sanitized")
    return run(
        as_log(original, "original"),
        released,
        _rules(rules),
        float(min_support),
        float(min_confidence),
        None,
        rule_support,
    )
