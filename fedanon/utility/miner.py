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

`rule_support` names the rule definition (RULE_SUPPORTS):

- "itemset" (the textbook one, above);
- "antecedent": a rule's support is its antecedent's, so X => Y is mined when
  s(X) >= ceil(sigma * N) and s(X u Y) / s(X) >= phi (X u Y itself may be rarer than sigma);
- "apriori": the rules of Christian Borgelt's apriori program with its default rule options,
  the miner of Oliveira's thesis: the antecedent's support, and one item in the consequent.
  At sigma = 0.1% and phi = 60% it gives the thesis's rule counts exactly (table 7.2:
  BMS-WebView-1 25,391 rules of up to 7 items, Retail 7,319 of up to 6; the same rules as
  `fim.apriori(..., target="r")`; tests/sanitization/test_thesis_rules.py), and against
  brute force in tests/utility/test_miner.py.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from itertools import combinations
from typing import Any

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
    """:func:`_fpgrowth` in a child process, watched: killed past its memory budget, and on any
    exception here (the CLI turns SIGTERM into one), so the caller stops within milliseconds.

    The child is a fresh interpreter (multiprocessing's "spawn"), not a fork of this process:
    a process where gRPC's threads run (a test worker, any caller that also talks to a
    federation) must not fork, as a forked copy can inherit a lock another thread held. Its
    input goes through the pipe once it says it runs, so this process never blocks in a long
    write that a signal could not end; the budget counts from the child's size once it has its
    input and the miner loaded ("ready"), as it did from a forked copy of the caller.
    """
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    child = context.Process(target=_mine_and_send, args=(theirs,))
    budget = _MINING_BASE_BYTES + _BYTES_PER_ITEMSET * max_itemsets
    try:  # a signal raised as the child starts (at the line after `start`) still ends it
        child.start()
        theirs.close()
        _next_message(ours, child)  # it runs
        ours.send((baskets, threshold, max_itemsets))
        _next_message(ours, child)  # ready
        start = _resident_bytes(child.pid)
        while not ours.poll(0.02):
            if not child.is_alive():
                raise FedanonError("the itemset miner ended without an answer (out of memory?)")
            if _resident_bytes(child.pid) - start > budget:
                raise _over_budget(min_support, max_itemsets)
        too_many, found = ours.recv()
    except (EOFError, BrokenPipeError):
        raise FedanonError("the itemset miner ended without an answer (out of memory?)") from None
    finally:
        if child.is_alive():
            child.kill()
        if child.pid is not None:
            child.join()
        theirs.close()
        ours.close()
    if too_many:
        raise _over_budget(min_support, max_itemsets)
    return found


def _next_message(connection, child) -> Any:
    """The child's next message, waited for in short polls (EOFError once it has ended)."""
    while not connection.poll(0.02) and child.is_alive():
        pass
    return connection.recv()


def _mine_and_send(connection) -> None:
    """The child's work: die at once on SIGTERM / SIGINT (the parent handles them), say it
    runs, take its input, load the miner and say so, mine, send the itemsets (or only that
    there are too many) through the local pipe. A parent gone meanwhile ends it quietly."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        connection.send(None)
        baskets, threshold, max_itemsets = connection.recv()
        import fim  # noqa: F401  # loaded before "ready": the budget counts the mining alone

        connection.send(None)
        found = _fpgrowth(baskets, threshold)
        connection.send((True, []) if len(found) > max_itemsets else (False, found))
    except (EOFError, BrokenPipeError):
        return
    finally:
        connection.close()


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
    max_consequent: int | None = None,
    max_rule_candidates: int = MAX_RULE_CANDIDATES,
) -> list[Rule]:
    """All rules X => Y with X u Y in `itemsets`, X and Y nonempty, confidence >= min_confidence.

    `itemsets` must be downward closed (every subset of a listed itemset is listed), as the
    output of `frequent_itemsets` is. With `min_antecedent_support` only rules whose antecedent
    has support count >= ceil(min_antecedent_support * n_transactions) are kept; with
    `max_consequent` only rules of at most that many consequent items. Rules come sorted by
    itemset, then antecedent, so two runs list them in the same order.
    """
    _check_fraction("minimum confidence", min_confidence)
    candidates = sum(_candidate_rules(len(itemset), max_consequent) for itemset in itemsets)
    if candidates > max_rule_candidates:
        raise FedanonError(
            f"{candidates:,} candidate rules from {len(itemsets):,} itemsets exceed the budget "
            f"of {max_rule_candidates:,}: raise the support"
        )
    min_body = (
        0 if min_antecedent_support is None else min_count(n_transactions, min_antecedent_support)
    )
    found: list[tuple[list[int], tuple[int, ...], Rule]] = []
    for itemset, count in itemsets.items():
        if len(itemset) < 2:
            continue
        ordered = sorted(itemset)
        smallest = 1 if max_consequent is None else max(1, len(ordered) - max_consequent)
        for size in range(smallest, len(ordered)):
            for left in combinations(ordered, size):
                antecedent = frozenset(left)
                body = itemsets[antecedent]
                confidence = count / body
                if body >= min_body and confidence >= min_confidence - _TOLERANCE:
                    rule = Rule(antecedent, itemset - antecedent, count, confidence)
                    found.append((ordered, left, rule))
    # Sorting the rules, not the (many more) itemsets: BMS-WebView-1 at the thesis's settings
    # has 461,521 itemsets for 25,391 rules.
    found.sort(key=lambda entry: (entry[0], len(entry[1]), entry[1]))
    return [rule for _, _, rule in found]


def _in_order(rules: list[Rule]) -> list[Rule]:
    """`association_rules`' order: by itemset, then antecedent size, then antecedent."""
    return sorted(rules, key=lambda r: (sorted(r.itemset), len(r.antecedent), sorted(r.antecedent)))


RULE_SUPPORTS = ("itemset", "antecedent", "apriori")


def _candidate_rules(size: int, max_consequent: int | None) -> int:
    """Rules X => Y one itemset of `size` items yields: every nonempty proper subset as
    consequent, or those of at most `max_consequent` items."""
    if max_consequent is None:
        return 2**size - 2 if size >= 2 else 0
    return sum(math.comb(size, j) for j in range(1, min(max_consequent, size - 1) + 1))


def mine_rules(
    tx: Transactions,
    min_support: float,
    min_confidence: float,
    rule_support: str = "itemset",
    max_itemsets: int = MAX_ITEMSETS,
) -> list[Rule]:
    """Rules at `min_support` and `min_confidence`; see the module docstring for `rule_support`.

    At most `max_itemsets` frequent itemsets are mined (:func:`frequent_itemsets`). The
    "apriori" rules come straight from the C library when the itemset bound rules out a blow-up
    (each such rule is one itemset with one item as consequent); otherwise through the budgeted
    itemsets, with the same rules.
    """
    if (
        rule_support == "apriori"
        and len(tx)
        and max_itemsets >= 1
        and _itemset_bound(tx, min_count(len(tx), min_support)) <= max_itemsets
    ):
        return _apriori_rules(tx, min_support, min_confidence)
    itemsets = frequent_itemsets(
        tx, itemset_support(len(tx), min_support, min_confidence, rule_support), max_itemsets
    )
    return rules_of(itemsets, len(tx), min_support, min_confidence, rule_support)


def _apriori_rules(tx: Transactions, min_support: float, min_confidence: float) -> list[Rule]:
    """The "apriori" rules mined in C by Borgelt's library (its FP-growth with target "r" gives
    exactly the rules of his apriori program, and faster): on BMS-WebView-1 at the thesis's
    settings deriving them from the 461,521 itemsets in Python takes 3 s a log, this 0.1 s.
    The confidence test is ours (the library's threshold is set a hair lower), so the rules
    equal `rules_of` on the itemsets (tests/utility/test_miner.py)."""
    import fim

    _check_fraction("minimum confidence", min_confidence)
    if len(tx) == 0:
        return []
    body = min_count(len(tx), min_support)
    # One empty transaction more, as in `frequent_itemsets`; thresholds are absolute counts.
    found = fim.fpgrowth(
        [*tx.to_lists(), []],
        target="r",
        supp=-body,
        conf=max(0.0, 100 * min_confidence - 1e-6),
        zmin=2,
        report="ab",
    )
    rules = []
    for head, antecedent, both, count in found:
        confidence = both / count
        if antecedent and count >= body and confidence >= min_confidence - _TOLERANCE:
            rules.append(Rule(frozenset(antecedent), frozenset([head]), int(both), confidence))
    return _in_order(rules)


def rules_of(
    itemsets: Itemsets,
    n_transactions: int,
    min_support: float,
    min_confidence: float,
    rule_support: str,
) -> list[Rule]:
    """The rules of `rule_support`'s definition built from itemsets mined (or released) at
    `itemset_support(...)`: one place says what each definition keeps."""
    itemset_support(n_transactions, min_support, min_confidence, rule_support)  # checks the name
    body = None if rule_support == "itemset" else min_support
    head = 1 if rule_support == "apriori" else None
    return association_rules(itemsets, n_transactions, min_confidence, body, head)


def itemset_support(
    n_transactions: int, min_support: float, min_confidence: float, rule_support: str
) -> float:
    """The relative support at which to mine the itemsets that rules are built from.

    "itemset": sigma itself. "antecedent" and "apriori": a rule X => Y with s(X) >= ceil(sigma N)
    and confidence >= phi needs only s(X u Y) >= ceil(phi ceil(sigma N)), so mine down to that.
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
