"""The miner against itemsets and rules counted by hand."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedanon.errors import FedanonError
from fedanon.utility.miner import (
    Rule,
    association_rules,
    frequent_itemsets,
    itemset_support,
    min_count,
    mine_rules,
    rules_of,
)
from fedanon.utility.transactions import Transactions

# Five baskets; counts by hand: 1:4 2:3 3:3 4:1 | 12:3 13:3 23:2 | 123:2 (4 never with others).
LOG = Transactions.from_lists([[1, 2, 3], [1, 3], [1, 2, 3], [1, 2], [4]])


def fs(*items: int) -> frozenset[int]:
    return frozenset(items)


def test_itemsets_at_forty_percent():
    assert frequent_itemsets(LOG, 0.4) == {
        fs(1): 4,
        fs(2): 3,
        fs(3): 3,
        fs(1, 2): 3,
        fs(1, 3): 3,
        fs(2, 3): 2,
        fs(1, 2, 3): 2,
    }


def test_threshold_is_inclusive_and_rounds_up():
    # 0.6 * 5 = 3 exactly: count 3 qualifies, count 2 does not.
    assert set(frequent_itemsets(LOG, 0.6)) == {fs(1), fs(2), fs(3), fs(1, 2), fs(1, 3)}
    # 0.5 * 5 = 2.5 -> at least 3 transactions.
    assert min_count(5, 0.5) == 3
    assert min_count(1000, 0.001) == 1


def test_rules_with_confidence_by_hand():
    rules = {r.key: r for r in mine_rules(LOG, 0.4, 0.75)}
    # In: 2=>1 (3/3), 1=>2 (3/4), 3=>1 (3/3), 1=>3 (3/4), 2,3=>1 (2/2).
    # Out: 2=>3, 3=>2, 1,2=>3, 1,3=>2, 2=>1,3, 3=>1,2 (all 2/3), 1=>2,3 (2/4).
    assert set(rules) == {
        (fs(2), fs(1)),
        (fs(1), fs(2)),
        (fs(3), fs(1)),
        (fs(1), fs(3)),
        (fs(2, 3), fs(1)),
    }
    assert rules[(fs(1), fs(3))] == Rule(fs(1), fs(3), 3, 0.75)
    assert rules[(fs(2, 3), fs(1))].support == 2


def test_rules_from_given_itemsets():
    itemsets = {fs(7): 10, fs(8): 5, fs(7, 8): 5}
    rules = association_rules(itemsets, 20, 0.5)
    assert [str(r) for r in rules] == ["7 => 8", "8 => 7"]
    assert [r.confidence for r in rules] == [0.5, 1.0]


def test_thresholds_outside_unit_interval_are_user_errors():
    with pytest.raises(FedanonError):
        frequent_itemsets(LOG, 1.5)
    with pytest.raises(FedanonError):
        mine_rules(LOG, 0.4, -0.1)


def test_empty_log_has_no_itemsets():
    assert frequent_itemsets(Transactions.from_lists([]), 0.1) == {}


def test_an_item_in_every_transaction_is_frequent():
    # pyfim on its own drops itemsets whose support is the number of transactions.
    tx = Transactions.from_lists([[5, 1], [5, 2], [5, 3]])
    assert frequent_itemsets(tx, 1.0) == {fs(5): 3}
    assert frequent_itemsets(tx, 0.3)[fs(5)] == 3


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(st.sets(st.integers(0, 5), max_size=5), min_size=1, max_size=25),
    min_support=st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0]),
)
def test_itemsets_equal_brute_force(rows, min_support):
    tx = Transactions.from_lists(sorted(r) for r in rows)
    threshold = min_count(len(tx), min_support)
    universe = sorted({i for r in rows for i in r})
    expected = {}
    for size in range(1, len(universe) + 1):
        for combo in combinations(universe, size):
            count = sum(1 for r in rows if set(combo) <= r)
            if count >= threshold:
                expected[frozenset(combo)] = count
    assert frequent_itemsets(tx, min_support) == expected


def test_antecedent_support_definition_keeps_rarer_itemsets():
    # 1 in 4 of 8 baskets, {1,2} in 3: at sigma = 50%, phi = 70% the itemset {1,2} (37.5%) is not
    # frequent, but its antecedent {1} (50%) is and confidence is 3/4.
    tx = Transactions.from_lists([[1, 2]] * 3 + [[1], [3], [3], [3], [3]])
    assert mine_rules(tx, 0.5, 0.7) == []
    rules = mine_rules(tx, 0.5, 0.7, rule_support="antecedent")
    assert rules == [Rule(fs(1), fs(2), 3, 0.75)]  # 2 => 1 has antecedent support 3 < 4


def test_unknown_rule_support_is_a_user_error():
    with pytest.raises(FedanonError, match="rule support"):
        mine_rules(LOG, 0.4, 0.5, rule_support="body")


def test_apriori_definition_keeps_one_item_consequents():
    # {1,2,3} in 4 of 5 baskets, each item alone in 4 too: 1 => 2,3 has confidence 1, but
    # Borgelt's apriori (the thesis's miner) builds only rules with one consequent item.
    tx = Transactions.from_lists([[1, 2, 3]] * 4 + [[4]])
    both = mine_rules(tx, 0.5, 0.9, rule_support="antecedent")
    single = mine_rules(tx, 0.5, 0.9, rule_support="apriori")
    assert Rule(fs(1), fs(2, 3), 4, 1.0) in both
    assert single == [r for r in both if len(r.consequent) == 1]
    assert len(single) == 9  # three pairs both ways, three triples


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sets(st.integers(0, 7), max_size=6), min_size=1, max_size=40),
    st.sampled_from([0.05, 0.1, 0.2, 0.3]),
    st.sampled_from([0.3, 0.6, 0.9, 2 / 3]),
)
def test_apriori_definition_is_brute_force_and_equals_the_itemset_derivation(rows, sigma, phi):
    """Borgelt's apriori (what "apriori" runs) against rules counted by brute force and against
    the same definition derived from the itemsets in Python (DSA's released itemsets)."""
    tx = Transactions.from_lists(sorted(r) for r in rows)
    threshold = min_count(len(tx), sigma)
    universe = sorted({i for r in rows for i in r})
    expected = []
    for size in range(2, len(universe) + 1):
        for combo in combinations(universe, size):
            both = sum(1 for r in rows if set(combo) <= r)
            for head in combo:
                body = sum(1 for r in rows if set(combo) - {head} <= r)
                if both and body >= threshold and both / body >= phi - 1e-9:
                    expected.append(Rule(fs(*combo) - {head}, fs(head), both, both / body))
    mined = mine_rules(tx, sigma, phi, rule_support="apriori")
    assert {r.key: (r.support, r.confidence) for r in mined} == {
        r.key: (r.support, r.confidence) for r in expected
    }
    itemsets = frequent_itemsets(tx, itemset_support(len(tx), sigma, phi, "apriori"))
    assert rules_of(itemsets, len(tx), sigma, phi, "apriori") == mined
