"""The metrics against values counted by hand on small logs."""

from __future__ import annotations

import pytest

from fedanon.algorithms.sanitization.api import evaluate_sanitization
from fedanon.algorithms.sanitization.metrics import dif, rule_metrics
from fedanon.algorithms.sanitization.rules import SensitiveRule
from fedanon.utility.miner import Rule
from fedanon.utility.transactions import Transactions


def rule(left, right):
    return Rule(frozenset(left), frozenset(right), 1, 1.0)


def test_rules_containing_a_sensitive_itemset_count_as_sensitive():
    sensitive = [SensitiveRule.of([1], [2])]
    original = [rule([1], [2]), rule([2], [1]), rule([1, 3], [2]), rule([3], [4]), rule([4], [3])]
    sanitized = [rule([3], [4]), rule([3], [5]), rule([2], [1])]
    m = rule_metrics(original, sanitized, sensitive)
    # Sensitive in R: 1=>2, 2=>1, 1,3=>2 (3). Non-sensitive: 3=>4, 4=>3 (2).
    # R': 2=>1 sensitive (1 of 3 left), 3=>4 and 3=>5 non-sensitive (2).
    assert m["sensitive_original"] == 3 and m["sensitive_sanitized"] == 1
    assert m["hf"] == pytest.approx(1 / 3)
    assert m["mc"] == pytest.approx((2 - 2) / 2)
    # 3=>5 is new: AP = (3 - 2) / 3.
    assert m["ap"] == pytest.approx(1 / 3)
    # SEF = (5 - (3 + 3)) / (5 - 3)
    assert m["sef"] == pytest.approx(-0.5)


def test_undefined_ratios_are_none_not_zero():
    m = rule_metrics([], [], [SensitiveRule.of([1], [2])])
    assert m["hf"] is None and m["mc"] is None and m["ap"] is None


def test_dif_is_the_share_of_item_occurrences_removed():
    d = Transactions.from_lists([[1, 2, 3], [1, 2], [4]])
    d2 = Transactions.from_lists([[1, 3], [1], [4]])
    assert dif(d, d2) == pytest.approx(2 / 6)


def test_evaluate_end_to_end_by_hand():
    # D: 1,2 together in 4 of 5 transactions; 3 with 1 in 3 of them.
    d = Transactions.from_lists([[1, 2, 3], [1, 2, 3], [1, 2, 3], [1, 2], [4]])
    d2 = Transactions.from_lists([[1, 3], [1, 3], [1, 3], [1], [4]])
    rules = [SensitiveRule.of([1], [2])]
    report = evaluate_sanitization(
        d, sanitized=d2, rules=rules, min_support=0.4, min_confidence=0.6
    )
    # Rules of D at 40%/60%: 1<=>2, 1<=>3, 2<=>3, 12=>3, 13=>2, 23=>1, 1=>23 (3/4),
    # 2=>13 (3/4), 3=>12 (1): 12 rules; sensitive (contain {1,2}): 2 + 6 = 8; others 1<=>3, 2<=>3.
    assert report["rules_original"] == 12
    assert report["sensitive_original"] == 8
    # D': only 1<=>3 remain (3/4 and 3/3): 2 rules, none sensitive; 2<=>3 are missed.
    assert report["rules_sanitized"] == 2
    assert report["hf"] == 0.0
    assert report["mc"] == pytest.approx((4 - 2) / 4)
    assert report["ap"] == 0.0
    assert report["dif"] == pytest.approx(4 / 12)
    assert report["sef"] == pytest.approx((12 - (2 + 8)) / (12 - 8))
