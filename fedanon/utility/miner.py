"""Frequent itemsets and association rules of a transaction log.

Itemsets are mined by Christian Borgelt's FP-growth (the `pyfim` package, a C extension): on
Retail and BMS-WebView-1 at sigma = 0.1% it is 40x faster than mlxtend's FP-growth and 180x
faster than efficient-apriori while finding exactly the same itemsets and counts (the
measurement is in docs/sanitization.md, "The miner"). Rules are derived here from the itemsets
so that every caller (the sanitization metrics, the randomization issue) mines D and D' with
the same definitions:

- an itemset X is frequent when its support count s(X) >= ceil(sigma * N) (the relative
  threshold sigma of the thesis, compared without floating-point surprises);
- every frequent itemset I with |I| >= 2 yields the rules X => I \\ X for each nonempty proper
  subset X whose confidence s(I) / s(X) reaches phi.

`rule_support="antecedent"` switches to the other definition in use, that of Borgelt's apriori
program and of Oliveira's thesis: a rule's support is its antecedent's, so X => Y is mined when
s(X) >= ceil(sigma * N) and s(X u Y) / s(X) >= phi (X u Y itself may be rarer than sigma).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from fedanon.errors import FedanonError
from fedanon.utility.transactions import Transactions

Itemsets = dict[frozenset[int], int]

# Relative thresholds are fractions typed by people (0.001, 0.6): forgive binary rounding.
_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Rule:
    """An association rule X => Y; `support` is the absolute count of X u Y."""

    antecedent: frozenset[int]
    consequent: frozenset[int]
    support: int
    confidence: float

    @property
    def itemset(self) -> frozenset[int]:
        """All items of the rule, X u Y."""
        return self.antecedent | self.consequent

    @property
    def key(self) -> tuple[frozenset[int], frozenset[int]]:
        """The rule's identity (X, Y), independent of its measured support and confidence."""
        return self.antecedent, self.consequent

    def __str__(self) -> str:
        left = ",".join(map(str, sorted(self.antecedent)))
        right = ",".join(map(str, sorted(self.consequent)))
        return f"{left} => {right}"


def min_count(n_transactions: int, min_support: float) -> int:
    """The absolute support count that the relative threshold `min_support` demands (>= 1)."""
    _check_fraction("minimum support", min_support)
    return max(1, math.ceil(min_support * n_transactions - _TOLERANCE))


#: Default budget of frequent itemsets one mining may find (``--max-itemsets``). Real runs find
#: thousands (Retail and BMS-WebView-1 at sigma = 0.1%: 7,712 and 4,218); a support so low that
#: the count explodes (BMS-WebView-1 at 0.05% never ends) is refused instead of filling memory.
MAX_ITEMSETS = 1_000_000
#: Default budget of candidate rules (``2^|I| - 2`` per itemset I) derived from the itemsets.
MAX_RULE_CANDIDATES = 20_000_000
#: Memory one mining child may grow by: a base for the FP-tree, plus per reported itemset.
_MINING_BASE_BYTES = 256 * 2**20
_BYTES_PER_ITEMSET = 512


def frequent_itemsets(
    tx: Transactions, min_support: float, max_itemsets: int = MAX_ITEMSETS
) -> Itemsets:
    """Every itemset with support count >= ceil(min_support * N), mapped to its count.

    More than `max_itemsets` of them is a one-line :class:`FedanonError` (raise the support or
    the budget). When a cheap upper bound cannot rule that out, FP-growth (a C call that holds
    off signals until it returns) runs in a child process that is killed once its memory
    outgrows the budget, or when SIGTERM / Ctrl-C reach this process.
    """
    if len(tx) == 0:
        return {}
    if max_itemsets < 1:
        raise FedanonError(f"the itemset budget must be at least 1, got {max_itemsets}")
    threshold = min_count(len(tx), min_support)
    # pyfim 6.28 leaves out every itemset contained in *all* transactions (try [[5, 1], [5, 2]]:
    # {5} is missing). One extra empty transaction changes no itemset's count but makes such
    # itemsets ordinary; tests/utility/test_miner.py checks the miner against brute force.
    baskets = [*tx.to_lists(), []]
    if _itemset_bound(tx, threshold) <= max_itemsets:
        found = _fpgrowth(baskets, threshold)
    else:
        found = _fpgrowth_in_child(baskets, threshold, min_support, max_itemsets)
    return {frozenset(items): int(count) for items, count in found}


def _fpgrowth(baskets: list[list[int]], threshold: int) -> list[tuple[tuple[int, ...], int]]:
    import fim  # the C extension is imported only by the commands that mine

    return fim.fpgrowth(baskets, target="s", supp=-threshold, zmin=1, report="a")


def _itemset_bound(tx: Transactions, threshold: int) -> float:
    """An upper bound on the frequent itemsets: each lies in >= `threshold` transactions'
    frequent items, so their count is at most sum_t (2^|t's frequent items| - 1) / threshold."""
    values, counts = np.unique(tx.items, return_counts=True)
    frequent = np.isin(tx.items, values[counts >= threshold])
    rows = np.repeat(np.arange(len(tx)), np.diff(tx.indptr))
    per_row = np.bincount(rows[frequent], minlength=len(tx))
    total = float(np.sum(np.exp2(np.minimum(per_row, 1000).astype(float)) - 1))
    return total / threshold


def _over_budget(min_support: float, max_itemsets: int) -> FedanonError:
    return FedanonError(
        f"mining at support {min_support:g} finds more than {max_itemsets:,} frequent itemsets "
        "(the --max-itemsets budget): raise the support or the budget"
    )


def _fpgrowth_in_child(
    baskets: list[list[int]], threshold: int, min_support: float, max_itemsets: int
) -> list[tuple[tuple[int, ...], int]]:
    """:func:`_fpgrowth` in a forked child, watched: killed past its memory budget, and on any
    exception here (the CLI turns SIGTERM into one), so the caller stops within milliseconds."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_mine_and_send, args=(send, baskets, threshold, max_itemsets))
    budget = _MINING_BASE_BYTES + _BYTES_PER_ITEMSET * max_itemsets
    child.start()
    send.close()
    try:
        start = _resident_bytes(child.pid)
        while not receive.poll(0.02):
            if not child.is_alive():
                raise FedanonError("the itemset miner ended without an answer (out of memory?)")
            if _resident_bytes(child.pid) - start > budget:
                raise _over_budget(min_support, max_itemsets)
        too_many, found = receive.recv()
    except EOFError:
        raise FedanonError("the itemset miner ended without an answer (out of memory?)") from None
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    if too_many:
        raise _over_budget(min_support, max_itemsets)
    return found


def _mine_and_send(send, baskets: list[list[int]], threshold: int, max_itemsets: int) -> None:
    """The child's work: die at once on SIGTERM / SIGINT (the parent handles them), mine, send
    the itemsets (or only that there are too many) through the local pipe."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    found = _fpgrowth(baskets, threshold)
    send.send((True, []) if len(found) > max_itemsets else (False, found))
    send.close()


def _resident_bytes(pid: int | None) -> int:
    """Resident memory of process `pid` (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def association_rules(
    itemsets: Itemsets,
    n_transactions: int,
    min_confidence: float,
    min_antecedent_support: float | None = None,
    max_rule_candidates: int = MAX_RULE_CANDIDATES,
) -> list[Rule]:
    """All rules X => Y with X u Y in `itemsets`, X and Y nonempty, confidence >= min_confidence.

    `itemsets` must be downward closed (every subset of a listed itemset is listed), as the
    output of `frequent_itemsets` is. With `min_antecedent_support` only rules whose antecedent
    has support count >= ceil(min_antecedent_support * n_transactions) are kept. Rules come
    sorted by itemset, then antecedent, so two runs list them in the same order.
    """
    _check_fraction("minimum confidence", min_confidence)
    candidates = sum(2 ** len(itemset) - 2 for itemset in itemsets if len(itemset) >= 2)
    if candidates > max_rule_candidates:
        raise FedanonError(
            f"{candidates:,} candidate rules from {len(itemsets):,} itemsets exceed the budget "
            f"of {max_rule_candidates:,}: raise the support"
        )
    min_body = (
        0 if min_antecedent_support is None else min_count(n_transactions, min_antecedent_support)
    )
    rules: list[Rule] = []
    for itemset, count in sorted(itemsets.items(), key=lambda kv: sorted(kv[0])):
        if len(itemset) < 2:
            continue
        ordered = sorted(itemset)
        for size in range(1, len(ordered)):
            for left in combinations(ordered, size):
                antecedent = frozenset(left)
                body = itemsets[antecedent]
                confidence = count / body
                if body >= min_body and confidence >= min_confidence - _TOLERANCE:
                    rules.append(Rule(antecedent, itemset - antecedent, count, confidence))
    return rules


RULE_SUPPORTS = ("itemset", "antecedent")


def mine_rules(
    tx: Transactions,
    min_support: float,
    min_confidence: float,
    rule_support: str = "itemset",
    max_itemsets: int = MAX_ITEMSETS,
) -> list[Rule]:
    """Rules at `min_support` and `min_confidence`; see the module docstring for `rule_support`.

    At most `max_itemsets` frequent itemsets are mined (:func:`frequent_itemsets`).
    """
    itemsets = frequent_itemsets(
        tx, itemset_support(len(tx), min_support, min_confidence, rule_support), max_itemsets
    )
    body = min_support if rule_support == "antecedent" else None
    return association_rules(itemsets, len(tx), min_confidence, min_antecedent_support=body)


def itemset_support(
    n_transactions: int, min_support: float, min_confidence: float, rule_support: str
) -> float:
    """The relative support at which to mine the itemsets that rules are built from.

    "itemset": sigma itself. "antecedent": a rule X => Y with s(X) >= ceil(sigma N) and
    confidence >= phi needs only s(X u Y) >= ceil(phi ceil(sigma N)), so mine down to that.
    """
    if rule_support not in RULE_SUPPORTS:
        raise FedanonError(
            f"rule support is one of {', '.join(RULE_SUPPORTS)}, not '{rule_support}'"
        )
    if rule_support == "itemset" or n_transactions == 0:
        return min_support
    body = min_count(n_transactions, min_support)
    return max(1, math.ceil(min_confidence * body - _TOLERANCE)) / n_transactions


def _check_fraction(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise FedanonError(f"{name} must be a fraction in [0, 1], got {value}")
