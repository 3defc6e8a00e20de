"""Discernibility ratio and classification error on tables small enough to check by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedanon.utility.metrics import classification_error, discernibility_ratio


def test_discernibility_ratio_by_hand() -> None:
    # Full-QID groups (a1, b1) x3, (a1, b2) x2, (a2, b1) x1: (9 + 4 + 1) / 6^2.
    df = pd.DataFrame(
        {
            "A": ["a1", "a1", "a1", "a1", "a1", "a2"],
            "B": ["b1", "b2", "b1", "b2", "b1", "b1"],
            "other": ["x", "y", "z", "x", "y", "z"],
        }
    )
    assert discernibility_ratio(df, ["A", "B"]) == pytest.approx(14 / 36)
    # One QID: groups a1 x5, a2 x1; a non-QID column never splits groups.
    assert discernibility_ratio(df, ["A"]) == pytest.approx(26 / 36)
    assert discernibility_ratio(df, []) == 1.0


def test_discernibility_ratio_bounds() -> None:
    distinct = pd.DataFrame({"q": [str(i) for i in range(50)]})
    assert discernibility_ratio(distinct, ["q"]) == pytest.approx(1 / 50)
    same = pd.DataFrame({"q": ["ANY"] * 50})
    assert discernibility_ratio(same, ["q"]) == 1.0
    with pytest.raises(ValueError, match="empty"):
        discernibility_ratio(same.iloc[:0], ["q"])


def test_classification_error_by_hand() -> None:
    train = pd.DataFrame(
        {"colour": ["red"] * 10 + ["blue"] * 10, "label": ["yes"] * 10 + ["no"] * 10}
    )
    test = pd.DataFrame(
        {"colour": ["red", "red", "blue", "blue"], "label": ["yes", "no", "no", "no"]}
    )
    assert classification_error(train, test, "label", ["colour"], set()) == pytest.approx(0.25)


def test_classification_error_without_features_is_majority_error() -> None:
    train = pd.DataFrame({"x": np.arange(10), "label": ["a"] * 7 + ["b"] * 3})
    test = pd.DataFrame({"x": np.arange(4), "label": ["a", "b", "b", "b"]})
    assert classification_error(train, test, "label", [], set()) == pytest.approx(0.75)
    # With the numeric feature the tree separates the classes on training data it has seen.
    assert classification_error(train, train, "label", ["x"], {"x"}) == 0.0
