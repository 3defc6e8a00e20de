"""Each algorithm on the thesis's worked examples (Figures 5.2, 5.6, 5.7, 5.8 and 5.10).

Items A..D are 1..4. The log of Figure 5.2(a): T1 ABCD, T2 ABC, T3 ABD, T4 ACD, T5 ABC, T6 BD;
sensitive rules A,B => D and A,C => D. Expected logs are read off the thesis's figures.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedanon.algorithms.sanitization.api import sanitize
from fedanon.algorithms.sanitization.dsa import downright_sanitize, marked_pairs
from fedanon.algorithms.sanitization.heuristic1 import group_victims
from fedanon.algorithms.sanitization.index import InvertedIndex, to_sanitize
from fedanon.algorithms.sanitization.rules import SensitiveRule
from fedanon.algorithms.sanitization.tables import as_log
from fedanon.utility.miner import frequent_itemsets
from fedanon.utility.transactions import Transactions

A, B, C, D, E = 1, 2, 3, 4, 5
LOG = Transactions.from_lists([[A, B, C, D], [A, B, C], [A, B, D], [A, C, D], [A, B, C], [B, D]])
RULES = [SensitiveRule.of([A, B], [D]), SensitiveRule.of([A, C], [D])]


def rows(algorithm: str, psi: float, seed: int = 0) -> list[list[int]]:
    result = sanitize(LOG, rules=RULES, algorithm=algorithm, psi=psi, seed=seed)
    return as_log(result.table).to_lists()


def test_inverted_file_and_degree_of_figure_5_2():
    index = InvertedIndex.build(LOG, RULES)
    assert [t.tolist() for t in index.tids] == [[0, 2], [0, 3]]
    assert index.degree.tolist() == [2, 0, 1, 1, 0, 0]


def test_num_trans_rounds_up():
    assert to_sanitize(2, 0.5) == 1
    assert to_sanitize(3, 0.5) == 2
    assert to_sanitize(7, 0.0) == 7
    assert to_sanitize(7, 1.0) == 0


def test_round_robin_figure_5_6a():
    # psi = 50%: T1 (degree 2) is the one transaction of both rules; both rules' first turn is A.
    assert rows("rra", 0.5) == [[B, C, D], [A, B, C], [A, B, D], [A, C, D], [A, B, C], [B, D]]


def test_round_robin_takes_turns_at_psi_zero():
    # AB=>D: T1 (degree 2) loses A, T3 loses B; AC=>D: T1 loses A, T4 loses C.
    assert rows("rra", 0.0) == [[B, C, D], [A, B, C], [A, D], [A, D], [A, B, C], [B, D]]


def test_item_grouping_figure_5_6c():
    # A and D are shared by both rules; D has the lower support (4 < 5), so D is the victim.
    assert group_victims(RULES, LOG.item_counts()) == [D, D]
    assert rows("iga", 0.5) == [[A, B, C], [A, B, C], [A, B, D], [A, C, D], [A, B, C], [B, D]]


def test_item_grouping_prefers_the_most_shared_item_then_lowest_support():
    rules = [
        SensitiveRule.of([A], [B]),
        SensitiveRule.of([B], [C]),
        SensitiveRule.of([B, D], [E]),
        SensitiveRule.of([D], [E]),
    ]
    support = {A: 9, B: 8, C: 1, D: 5, E: 4}
    # B is in three rules -> victim of rules 1-3; rule 4 alone picks E (support 4 < 5).
    assert group_victims(rules, support) == [B, B, B, E]


def test_random_picks_items_of_the_rule_in_the_selected_transactions():
    result = rows("ra", 0.5, seed=3)
    assert result[1:] == LOG.to_lists()[1:]  # only T1 (highest degree) is sanitized
    removed = set(LOG.row(0).tolist()) - set(result[0])
    assert removed and removed <= {A, B, C, D}
    assert len(removed) <= 2


def test_random_is_seeded():
    assert rows("ra", 0.0, seed=11) == rows("ra", 0.0, seed=11)
    outcomes = {tuple(map(tuple, rows("ra", 0.0, seed=s))) for s in range(20)}
    assert len(outcomes) > 1


def test_sliding_window_partial_figure_5_7b():
    result = rows("swa", 0.5, seed=5)
    # The shortest sensitive transactions T3 and T4 are sanitized; T1 stays intact.
    assert result[0] == [A, B, C, D]
    assert [result[1], result[4], result[5]] == [[A, B, C], [A, B, C], [B, D]]
    assert len(result[2]) == 2 and set(result[2]) < {A, B, D}
    assert len(result[3]) == 2 and set(result[3]) < {A, C, D}


def test_sliding_window_full_figure_5_7c_with_look_ahead():
    result = rows("swa", 0.0, seed=5)
    # T1: A and D are both in two rules; D has the lower support -> D, and the look-ahead spares
    # T1 a second deletion for A,C => D.
    assert result[0] == [A, B, C]
    assert len(result[2]) == 2 and len(result[3]) == 2
    assert result[5] == [B, D]


def test_sliding_window_per_rule_thresholds_and_windows():
    tx = Transactions.from_lists([[A, B]] * 4 + [[C, D]] * 4)
    rules = [SensitiveRule.of([A], [B]), SensitiveRule.of([C], [D])]
    out = as_log(sanitize(tx, rules=rules, algorithm="swa", psi=[0.5, 0.0], window=3, seed=1).table)
    lengths = out.lengths().tolist()
    # Windows {0,1,2}, {3,4,5}, {6,7}: A=>B has 3 + 1 sensitive transactions -> 2 + 1 sanitized;
    # C=>D has 2 + 2 -> all 4 sanitized.
    assert lengths == [1, 1, 2, 1, 1, 1, 1, 1]


FIG_5_8 = Transactions.from_lists(
    [[A, B, C, D], [A, B, C], [A, C, D], [A, B, C, D], [B, D], [A, B, D]]
)


def test_dsa_removes_every_superset_of_the_marked_pair():
    itemsets = frequent_itemsets(FIG_5_8, 2 / 6)
    released, marked = downright_sanitize(
        itemsets, [SensitiveRule.of([A, B], [C])], np.random.default_rng(0)
    )
    assert len(marked) == 1 and marked[0] < frozenset({A, B, C})
    assert frozenset({A, B, C}) not in released
    assert all(not marked[0] <= itemset for itemset in released)
    kept = {i for i in itemsets if not marked[0] <= i}
    assert set(released) == kept
    assert all(released[i] == itemsets[i] for i in released)  # original supports


def test_dsa_reuses_an_already_marked_pair():
    rules = [SensitiveRule.of([A, B], [C]), SensitiveRule.of([A, B], [D])]
    for seed in range(10):
        marked = marked_pairs(rules, np.random.default_rng(seed))
        first = marked[0]
        if first == frozenset({A, B}):
            assert marked == [first]  # AB is inside ABD too: nothing new marked
        else:
            assert len(marked) == 2


@pytest.mark.parametrize("algorithm", ["iga", "rra", "ra", "swa"])
def test_psi_one_leaves_the_log_untouched(algorithm):
    assert rows(algorithm, 1.0) == LOG.to_lists()


F = 6


def test_sliding_window_look_ahead_spares_rules_already_broken():
    # Worked by hand (thesis section 5.3.2, psi = 0). T0 = ABCDEF holds the five rules
    # AB, BC, CD, DE, DF (each X => Y of two items); T1 = B only makes B more frequent than C
    # in the window. Victims in T0 (item in most of T0's rules; ties: lower window support):
    # AB -> B (in 2 rules); BC -> C (B and C in 2 rules each, C has support 1 < 2); CD, DE,
    # DF -> D (in 3 rules). In rule order: AB deletes B, and the look-ahead drops BC (B is
    # one of its items: T0 no longer supports it); CD deletes D and drops DE and DF. T0 keeps
    # A, C, E, F. Without the look-ahead, BC would also delete C.
    tx = Transactions.from_lists([[A, B, C, D, E, F], [B]])
    rules = [
        SensitiveRule.of([A], [B]),
        SensitiveRule.of([B], [C]),
        SensitiveRule.of([C], [D]),
        SensitiveRule.of([D], [E]),
        SensitiveRule.of([D], [F]),
    ]
    out = as_log(sanitize(tx, rules=rules, algorithm="swa", psi=0.0, seed=0).table)
    assert out.to_lists() == [[A, C, E, F], [B]]


def test_sliding_window_has_no_look_ahead_when_psi_is_above_zero():
    # psi = 0.5: A => B has T0 only (NumTrans 1) and B => C has T0 and T1
    # (NumTrans = ceil(2 x 0.5) = 1). Both pick the shortest transaction, T0 = ABC, whose
    # victim for both rules is B (in 2 of its rules). Without a look-ahead (psi > 0), B => C
    # sanitizes T0 as well, so T1 = BCDE stays intact.
    tx = Transactions.from_lists([[A, B, C], [B, C, D, E]])
    rules = [SensitiveRule.of([A], [B]), SensitiveRule.of([B], [C])]
    out = as_log(sanitize(tx, rules=rules, algorithm="swa", psi=0.5, seed=0).table)
    assert out.to_lists() == [[A, C], [B, C, D, E]]
