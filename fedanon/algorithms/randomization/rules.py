"""Association-rule recovery: how many of the original data's rules a release still yields.

Each record becomes a transaction of items (column, value) over the QIDs and, when given, the
sensitive column (so rules linking QIDs to the sensitive value count too). Rules are mined on the
original D and on the release D' with the shared miner at the same thresholds (the paper's
support 8 %, confidence 15 %); recovery is |Asso_D ∩ Asso_D'| / |Asso_D| and the artificial
rules are those of D' that D does not have. Rules are compared by (antecedent, consequent) only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedanon.algorithms.randomization.coding import encode, observed_domain
from fedanon.utility.miner import mine_rules
from fedanon.utility.transactions import Transactions

MIN_SUPPORT = 0.08
MIN_CONFIDENCE = 0.15


def as_transactions(
    table: pd.DataFrame, columns: Sequence[str], domains: Sequence[Sequence[str]]
) -> Transactions:
    """One transaction per row: item offset(column) + code(value), one item per column."""
    coded = encode(table, columns, domains)
    offsets = np.concatenate([[0], np.cumsum(coded.sizes)[:-1]])
    items = (coded.codes.astype(np.int64) + offsets).ravel()
    indptr = np.arange(0, items.size + 1, len(columns), dtype=np.int64)
    return Transactions.from_csr(indptr, items)


def rule_recovery(
    original: pd.DataFrame,
    release: pd.DataFrame,
    columns: Sequence[str],
    min_support: float = MIN_SUPPORT,
    min_confidence: float = MIN_CONFIDENCE,
) -> dict[str, Any]:
    """Rules of D and D' at the thresholds; recovered fraction and artificial count."""
    domains = [observed_domain(original[c]) for c in columns]
    before = {
        r.key
        for r in mine_rules(
            as_transactions(original, columns, domains), min_support, min_confidence
        )
    }
    after = {
        r.key
        for r in mine_rules(as_transactions(release, columns, domains), min_support, min_confidence)
    }
    kept = len(before & after)
    return {
        "columns": list(columns),
        "min_support": min_support,
        "min_confidence": min_confidence,
        "rules_original": len(before),
        "rules_release": len(after),
        "recovered": kept,
        "recovery": round(kept / len(before), 6) if before else None,
        "artificial": len(after - before),
    }
