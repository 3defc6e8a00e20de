"""A sanitization release as a table, and back: the shape `fedanon.Release` gives every method.

A transaction log is not a table of attributes, so a data-sharing release (iga, rra, ra, swa)
is one row per transaction, in the original order: column ``items`` holds the transaction's
FIMI line (item numbers ascending, separated by spaces; ``""`` for a transaction that lost every
item). DSA shares patterns instead: one row per released frequent itemset, sorted by size then
items, with ``itemset`` (a FIMI line) and ``support`` (its count in the original log). Both
tables are what the command line writes, line for line (:func:`release_text`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeGuard

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError
from fedanon.utility.miner import Itemsets
from fedanon.utility.transactions import Transactions

#: A transaction log: the library's type, baskets of item numbers, or a log table.
LogSpec = Transactions | Sequence[Iterable[int]] | pd.DataFrame


def log_table(tx: Transactions) -> pd.DataFrame:
    """One row per transaction: its FIMI line in column ``items``."""
    return pd.DataFrame({"items": pd.Series(tx.to_fimi().split("\n")[:-1], dtype=object)})


def itemsets_table(itemsets: Itemsets) -> pd.DataFrame:
    """One row per itemset, by size then items: ``itemset`` (FIMI line) and ``support``."""
    ordered = sorted(itemsets.items(), key=lambda kv: (len(kv[0]), sorted(kv[0])))
    return pd.DataFrame(
        {
            "itemset": pd.Series([" ".join(map(str, sorted(i))) for i, _ in ordered], dtype=object),
            "support": pd.Series([count for _, count in ordered], dtype="int64"),
        }
    )


def is_itemsets_table(table: object) -> TypeGuard[pd.DataFrame]:
    """True for a DSA release table (itemsets with supports) rather than a log."""
    return isinstance(table, pd.DataFrame) and "itemset" in table.columns


def itemsets_of(table: pd.DataFrame) -> Itemsets:
    """The itemsets and supports of a DSA release table."""
    return {
        frozenset(int(i) for i in str(text).split()): int(count)
        for text, count in zip(table["itemset"], table["support"], strict=True)
    }


def as_log(value: LogSpec, name: str = "transactions") -> Transactions:
    """The log as `Transactions`: given so, from baskets, or from a log table's ``items``."""
    if isinstance(value, Transactions):
        return value
    if isinstance(value, str | bytes):
        raise FedanonError(f"{name} must be a log (baskets of item numbers), got a string")
    try:
        if isinstance(value, pd.DataFrame):
            return _parsed(value, name)
        return Transactions.from_lists(value)
    except FedanonError:  # already names what is wrong (a FedanonError is a ValueError too)
        raise
    except (TypeError, ValueError):
        raise FedanonError(f"{name} must hold baskets of non-negative item numbers") from None


def _parsed(table: pd.DataFrame, name: str) -> Transactions:
    """A log table's FIMI lines as CSR arrays (one split of the whole text, no loop per item)."""
    if "items" not in table.columns:
        raise FedanonError(f"{name}: a log table needs the column 'items' (FIMI lines)")
    lines = table["items"].astype(str)
    lengths = lines.str.count(r"\S+").to_numpy(dtype=np.int64)
    # numpy's C text parser stops at the first token that is not a number: count to catch it.
    # (A text without any number is refused by the parser rather than read as none: a log
    # whose every transaction is empty is parsed without it.)
    text = " ".join(lines)
    items = np.fromstring(text, dtype=np.int64, sep=" ") if lengths.any() else np.empty(0, np.int64)
    if len(items) != lengths.sum() or (items < 0).any():
        raise ValueError("not a list of non-negative item numbers")
    return Transactions.from_csr(np.concatenate(([0], np.cumsum(lengths))), items)


def release_text(table: pd.DataFrame) -> str:
    """The release as the command line writes it: FIMI lines, or ``i j k (support)`` lines."""
    if is_itemsets_table(table):
        lines = (f"{s} ({c})" for s, c in zip(table["itemset"], table["support"], strict=True))
    else:
        lines = (str(line) for line in table["items"])
    return "".join(f"{line}\n" for line in lines)
