"""The independent k-anonymity checker on hand-made releases."""

from __future__ import annotations

import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.models.k_anonymity import check_k_anonymity


def test_groups_by_exact_cell_text_and_finds_the_smallest_group():
    df = pd.DataFrame(
        {
            "age": ["30", "30", "?", "?", "?", "30.0"],
            "sex": ["F", "F", "?", "?", "?", "F"],
        }
    )
    result = check_k_anonymity(df, ["age", "sex"], 2)
    # "30.0" is not "30": it forms a group of one
    assert not result.ok
    assert (result.groups, result.min_group_size) == (3, 1)
    assert (result.violating_groups, result.violating_rows) == (1, 1)
    assert result.smallest == {"age": "30.0", "sex": "F"}


def test_a_suppressed_value_is_a_value_like_any_other():
    df = pd.DataFrame({"a": ["?", "?", "x", "x"], "b": ["?", "?", "?", "?"]})
    assert check_k_anonymity(df, ["a", "b"], 2).ok
    assert not check_k_anonymity(df, ["a", "b"], 3).ok


def test_missing_cells_compare_as_empty_text():
    df = pd.DataFrame({"a": [None, "", "z"]})
    result = check_k_anonymity(df, ["a"], 2)
    assert result.min_group_size == 1 and result.groups == 2


def test_empty_release_is_trivially_k_anonymous():
    assert check_k_anonymity(pd.DataFrame({"a": []}), ["a"], 5).ok


@pytest.mark.parametrize(
    ("qids", "k", "message"),
    [
        (["a", "nope"], 2, "no QID column 'nope'"),
        ([], 2, "no QID columns"),
        (["a", "a"], 2, "listed twice"),
        (["a"], 0, "k must be an integer >= 1"),
    ],
)
def test_bad_requests_are_one_line_errors(qids, k, message):
    with pytest.raises(FedanonError, match=message):
        check_k_anonymity(pd.DataFrame({"a": ["1"]}), qids, k)
