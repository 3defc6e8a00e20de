"""The classification protocol: folds, the 5x2 cv F test, feature encoding, the inducers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.experiments.classification import (
    Prepared,
    evaluate_classification,
    five_by_two_f_test,
    five_by_two_folds,
    fold_accuracy,
    impute_at_random,
    numeric_columns,
    released_numbers,
)


def test_folds_are_five_halvings_each_used_both_ways():
    labels = pd.Series(["a"] * 61 + ["b"] * 40)
    folds = five_by_two_folds(labels, seed=4)
    assert len(folds) == 10
    for i in range(5):
        (train, test), (train2, test2) = folds[2 * i], folds[2 * i + 1]
        assert set(train) == set(test2) and set(test) == set(train2)
        assert sorted([*train, *test]) == list(range(101))
        # stratified: each half holds half of each class (odd counts rounded either way)
        assert abs((labels.iloc[train] == "a").sum() - 30.5) <= 0.5
        assert abs((labels.iloc[train] == "b").sum() - 20) <= 0.5
    assert five_by_two_folds(labels, seed=4)[0][0].tolist() == folds[0][0].tolist()


def test_f_test_matches_a_hand_computation():
    # replication i: differences 0.02 and 0.0 -> sum p^2 = 5 * 0.0004 = 0.002,
    # s_i^2 = 2 * 0.01^2 = 0.0002, F = 0.002 / (2 * 0.001) = 1.0, P(F(10,5) > 1) ~ 0.53
    a = [0.12, 0.10] * 5
    b = [0.10, 0.10] * 5
    result = five_by_two_f_test(a, b)
    assert result["F"] == pytest.approx(1.0)
    assert result["p"] == pytest.approx(0.5343, abs=1e-3)
    assert result["significant"] is False


def test_f_test_with_identical_errors_is_not_significant():
    same = [0.1] * 10
    assert five_by_two_f_test(same, same) == {"F": 0.0, "p": 1.0, "significant": False}
    other = five_by_two_f_test([0.2] * 10, same)
    assert math.isinf(other["F"]) and other["significant"] is True


def test_released_numbers_read_ranges_as_midpoints_and_markers_as_missing():
    values = released_numbers(pd.Series(["5", "[2, 4]", "?", "[1.5, 2.5]", "x"]))
    assert values[:2].tolist() == [5.0, 3.0] and values[3] == 2.0
    assert np.isnan(values[2]) and np.isnan(values[4])


def test_numeric_columns_need_every_present_value_to_be_a_number():
    df = pd.DataFrame({"a": ["1", "2.5", None], "b": ["1", "x", "2"], "c": ["", "", ""]})
    assert numeric_columns(df) == {"a"}


def test_random_imputation_draws_only_known_values():
    x = pd.DataFrame({"c": ["u", None, None, "v"], "n": [1.0, np.nan, 3.0, np.nan]})
    filled = impute_at_random(x, np.random.default_rng(0))
    assert set(filled["c"]) <= {"u", "v"} and set(filled["n"]) <= {1.0, 3.0}
    assert filled.loc[0, "c"] == "u" and filled.loc[2, "n"] == 3.0


def _separable(n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    colour = rng.choice(["red", "blue"], n)
    size = rng.integers(0, 100, n).astype(str)
    return pd.DataFrame(
        {"colour": colour, "size": size, "cls": np.where(colour == "red", "p", "q")}
    )


@pytest.mark.parametrize("inducer", ["c45", "naive-bayes", "logistic"])
def test_every_inducer_learns_a_separable_class(inducer):
    df = _separable()
    prepared = Prepared(df.iloc[:100], df.iloc[100:], {"size"})
    assert fold_accuracy(prepared, "cls", inducer) == 1.0


@pytest.mark.parametrize("inducer", ["c45", "naive-bayes", "logistic"])
def test_a_fully_suppressed_release_predicts_the_training_majority(inducer):
    df = _separable()
    train = df.iloc[:100].copy()
    train["colour"] = "?"
    train["size"] = "?"
    train.loc[train.index[:70], "cls"] = "p"
    train.loc[train.index[70:], "cls"] = "q"
    prepared = Prepared(train, df.iloc[100:], {"size"})
    expected = float((df.iloc[100:]["cls"] == "p").mean())
    assert fold_accuracy(prepared, "cls", inducer) == pytest.approx(expected)


def test_protocol_rejects_k_above_the_training_half():
    df = _separable(40)
    with pytest.raises(FedanonError, match="exceeds the training half"):
        evaluate_classification(df, class_column="cls", methods={}, k_values=[21])
