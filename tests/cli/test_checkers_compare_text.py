"""The independent checkers compare cells as released text, also on frames a notebook passes.

A CSV release is text, but the Python API takes any DataFrame: a numeric or boolean column must
be judged by the strings it would be written as. Otherwise the numbers 1, 1.0 and True (equal
in Python, three different released strings) would form one group, and a numeric sensitive
column would never match its sensitive value "1". The expected verdicts are counted by hand.
"""

from __future__ import annotations

import pandas as pd

import fedanon
from fedanon.models.lkc import check_lkc as lkc_model


def test_k_anonymity_keeps_1_1_0_and_true_apart():
    df = pd.DataFrame({"q": pd.Series([1, 1.0, True], dtype=object)})
    verdict = fedanon.check_k_anonymity(df, qids=["q"], k=2)
    assert not verdict["ok"]
    assert verdict["groups"] == 3
    assert verdict["min_group_size"] == 1


def test_k_anonymity_of_equal_numbers_in_one_dtype_is_one_group():
    df = pd.DataFrame({"q": [7, 7, 7]})
    verdict = fedanon.check_k_anonymity(df, qids=["q"], k=3)
    assert verdict["ok"] and verdict["groups"] == 1
    assert verdict["smallest_group"] == {"q": "7"}


def test_k_anonymity_reads_missing_cells_as_empty_text():
    # None and "" are both written as an empty cell: one group of two.
    df = pd.DataFrame({"q": pd.Series([None, ""], dtype=object)})
    verdict = fedanon.check_k_anonymity(df, qids=["q"], k=2)
    assert verdict["ok"] and verdict["groups"] == 1


def test_lkc_numeric_sensitive_column_matches_its_text_value():
    # Two groups of 2 on q; the sensitive value 1 (an int column) is in both rows of group a:
    # confidence 2/2 > C = 1/2.
    df = pd.DataFrame({"q": ["a", "a", "b", "b"], "s": [1, 1, 0, 2]})
    result = lkc_model(df, ["q"], {"s": ["1"]}, 1, 2, "1/2")
    assert not result.ok
    assert result.worst is not None
    assert result.worst.values == ("a",)
    assert result.worst.sensitive == ("s", "1")
    assert result.max_confidence[("s", "1")] == 1


def test_lkc_api_numeric_sensitive_column_matches():
    df = pd.DataFrame({"q": ["a", "a", "b", "b"], "s": [1, 1, 0, 2]})
    verdict = fedanon.check_lkc(df, qids=["q"], sensitive_values={"s": ["1"]}, L=1, k=2, C="1/2")
    assert not verdict["ok"]


def test_lkc_keeps_1_1_0_and_true_apart():
    df = pd.DataFrame({"q": pd.Series([1, 1.0, True], dtype=object), "s": ["x", "y", "z"]})
    result = lkc_model(df, ["q"], {}, 1, 2, 1)
    assert not result.ok
    assert result.min_group_size == 1
