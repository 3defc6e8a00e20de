"""The C4.5-style inducer: hand-made data whose right tree is known, then Adult."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.readers.datadir import data_dir, have_data
from fedanon.utility.c45 import C45, added_errors

ADULT_NUMERIC = {"age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"}


def _table(
    groups: Sequence[tuple[Mapping[str, object], Mapping[str, int]]],
) -> tuple[pd.DataFrame, pd.Series]:
    """Rows from (attribute values, {class: count}) groups, in a fixed interleaved order."""
    rows: list[Mapping[str, object]] = []
    labels: list[str] = []
    for values, counts in groups:
        for label, count in counts.items():
            rows += [values] * count
            labels += [label] * count
    order = np.random.default_rng(7).permutation(len(rows))
    X = pd.DataFrame(rows).iloc[order].reset_index(drop=True)
    return X, pd.Series(labels).iloc[order].reset_index(drop=True)


def test_single_categorical_split_is_found_and_noise_ignored() -> None:
    rng = np.random.default_rng(1)
    color = np.array(["red"] * 20 + ["blue"] * 20 + ["green"] * 20)
    X = pd.DataFrame({"noise": rng.choice(["p", "q", "r"], 60), "color": color})
    y = pd.Series(np.where(color == "blue", "B", "A"))
    model = C45().fit(X, y, numeric=set())
    assert model.to_text().splitlines() == [
        "color = blue: B (20/0)",
        "color = green: A (20/0)",
        "color = red: A (20/0)",
    ]
    assert (model.predict(X) == y.to_numpy()).all()
    assert (model.n_leaves, model.n_nodes, model.depth) == (3, 4, 1)


def test_numeric_threshold_is_midpoint_of_adjacent_values() -> None:
    x = np.arange(1, 41, dtype=float)
    X = pd.DataFrame({"x": x})
    y = pd.Series(np.where(x > 20, "high", "low"))
    model = C45().fit(X, y, numeric={"x"})
    assert model.to_text().splitlines() == ["x <= 20.5: low (20/0)", "x > 20.5: high (20/0)"]
    probe = pd.DataFrame({"x": [20.4, 20.6, -100.0, 1e9]})
    assert list(model.predict(probe)) == ["low", "high", "low", "high"]


def test_average_gain_rule_beats_plain_gain_ratio() -> None:
    # 'tiny' splits off 2 pure rows: gain 0.020, split info 0.141, gain ratio 0.144.
    # 'half' splits 50/50 at 65% purity: gain 0.066, split info 1, gain ratio 0.066.
    # Plain gain ratio would pick 'tiny'; C4.5 only considers attributes whose gain is at
    # least the average (0.043), so it must pick 'half'.
    X, y = _table(
        [
            ({"tiny": "x", "half": "h1"}, {"A": 2}),
            ({"tiny": "y", "half": "h1"}, {"A": 31, "B": 17}),
            ({"tiny": "y", "half": "h2"}, {"A": 17, "B": 33}),
        ]
    )
    model = C45(prune=False).fit(X, y, numeric=set())
    assert model.to_text().splitlines()[0].startswith("half = h1")


def test_min_leaf_forbids_splitting_off_a_single_row() -> None:
    X, y = _table([({"c": "red"}, {"A": 9}), ({"c": "blue"}, {"B": 1})])
    assert C45(min_leaf=2, prune=False).fit(X, y, set()).n_leaves == 1
    assert C45(min_leaf=1, prune=False).fit(X, y, set()).n_leaves == 2


def test_pruning_collapses_a_noise_split_but_keeps_a_real_one() -> None:
    # Training errors drop from 6 to 5 with the split, so the grown tree keeps it, but the
    # pessimistic estimate of the leaf (8.24) beats that of the three branches (9.38).
    noise = [
        ({"g": "p"}, {"A": 18, "B": 2}),
        ({"g": "q"}, {"A": 18, "B": 2}),
        ({"g": "r"}, {"A": 1, "B": 2}),
    ]
    X, y = _table(noise)
    assert C45(prune=False).fit(X, y, set()).n_leaves == 3
    assert C45(prune=True).fit(X, y, set()).n_leaves == 1

    X, y = _table([({"g": "p"}, {"A": 18, "B": 2}), ({"g": "q"}, {"A": 2, "B": 18})])
    assert C45(prune=True).fit(X, y, set()).n_leaves == 2


def test_subtree_raising_replaces_root_by_its_largest_branch() -> None:
    # The root splits on a (higher gain ratio, above-average gain); its largest branch a=x
    # splits on b. Fed all 35 rows, that branch is estimated at 13.70 errors, the two-level
    # tree at 13.76, a leaf at 16.49: C4.5 raises the branch to the root.
    X, y = _table(
        [
            ({"a": "x", "b": "u"}, {"N": 3, "P": 8}),
            ({"a": "x", "b": "v"}, {"N": 12, "P": 6}),
            ({"a": "y", "b": "u"}, {"P": 5}),
            ({"a": "y", "b": "v"}, {"P": 1}),
        ]
    )
    assert C45(prune=False).fit(X, y, set()).to_text().splitlines()[0] == "a = x:"
    assert C45(subtree_raising=False).fit(X, y, set()).to_text().splitlines()[0] == "a = x:"
    assert C45().fit(X, y, set()).to_text().splitlines() == [
        "b = u: P (16/3)",
        "b = v: N (19/7)",
    ]


def test_added_errors_match_quinlans_bounds() -> None:
    # Quinlan (1993, ch. 4) quotes U25%(0, N) = 0.750, 0.206, 0.143 for N = 1, 6, 9 and
    # U25%(1, 16) = 0.157 (exact binomial; C4.5's normal approximation is close).
    assert added_errors(1, 0, 0.25) == pytest.approx(0.750, abs=1e-3)
    assert added_errors(6, 0, 0.25) / 6 == pytest.approx(0.206, abs=1e-3)
    assert added_errors(9, 0, 0.25) / 9 == pytest.approx(0.143, abs=1e-3)
    assert (1 + added_errors(16, 1, 0.25)) / 16 == pytest.approx(0.157, abs=0.005)
    assert added_errors(0, 0, 0.25) == 0.0
    # A lower confidence factor means a more pessimistic (larger) estimate.
    assert added_errors(50, 5, 0.10) > added_errors(50, 5, 0.25) > added_errors(50, 5, 0.5)


def test_unknown_category_is_spread_over_branches_by_weight() -> None:
    # The majority branch (red, 12 rows) says A, but 20 of the 32 training rows are B:
    # C4.5's weighted routing predicts B for a value it never saw.
    X, y = _table(
        [({"c": "red"}, {"A": 12}), ({"c": "blue"}, {"B": 10}), ({"c": "white"}, {"B": 10})]
    )
    model = C45().fit(X, y, set())
    assert model.n_leaves == 3
    assert list(model.predict(pd.DataFrame({"c": ["green", "red", None]}))) == ["B", "A", "B"]


def test_value_absent_at_a_node_gets_an_empty_leaf_with_the_node_class() -> None:
    # b = w only occurs under a = y, so under a = x its branch is C4.5's empty leaf, which
    # predicts the majority of the a = x rows (P) and counts in the tree size.
    X, y = _table(
        [
            ({"a": "x", "b": "u"}, {"P": 10}),
            ({"a": "x", "b": "v"}, {"N": 8}),
            ({"a": "y", "b": "w"}, {"N": 10}),
            ({"a": "y", "b": "u"}, {"N": 10}),
        ]
    )
    model = C45().fit(X, y, set())
    assert model.to_text().splitlines() == [
        "a = x:",
        "|   b = u: P (10/0)",
        "|   b = v: N (8/0)",
        "|   b = w: P (0/0)",
        "a = y: N (20/0)",
    ]
    assert (model.n_nodes, model.n_leaves, model.depth) == (6, 4, 2)
    probe = pd.DataFrame({"a": ["x", "x", "y"], "b": ["w", "v", "u"]})
    assert list(model.predict(probe)) == ["P", "N", "N"]


def test_missing_numeric_value_at_prediction_is_weighted() -> None:
    x = np.arange(1, 41, dtype=float)
    model = C45().fit(pd.DataFrame({"x": x}), pd.Series(np.where(x > 30, "high", "low")), {"x"})
    assert list(model.predict(pd.DataFrame({"x": [math.nan, 35.0]}))) == ["low", "high"]


def test_no_features_predicts_training_majority() -> None:
    y = pd.Series(["a", "b", "b", "c", "b"])
    model = C45().fit(pd.DataFrame(index=range(5)), y, set())
    assert model.n_leaves == 1
    assert list(model.predict(pd.DataFrame(index=range(3)))) == ["b", "b", "b"]


def test_input_errors_are_reported() -> None:
    X = pd.DataFrame({"x": [1.0, None, 3.0], "c": ["a", "b", "c"]})
    y = pd.Series(["p", "q", "p"])
    with pytest.raises(FedanonError, match="missing value in training column 'x' \\(row 1\\)"):
        C45().fit(X, y, {"x"})
    with pytest.raises(FedanonError, match="numeric column 'c' holds 'a'"):
        C45().fit(X.fillna(2.0), y, {"c"})
    with pytest.raises(FedanonError, match="not among the features"):
        C45().fit(X.fillna(2.0), y, {"nope"})
    model = C45().fit(X.fillna(2.0), y, {"x"})
    with pytest.raises(FedanonError, match="columns missing for prediction"):
        model.predict(pd.DataFrame({"x": [1.0]}))
    with pytest.raises(RuntimeError, match="not fitted"):
        C45().predict(X)


needs_adult = pytest.mark.skipif(not have_data("adult"), reason="shared Adult data not present")


@pytest.fixture(scope="module")
def adult() -> tuple[pd.DataFrame, pd.DataFrame]:
    folder = data_dir() / "adult"
    return pd.read_csv(folder / "adult_train.csv"), pd.read_csv(folder / "adult_test.csv")


def _error(model: C45, test: pd.DataFrame, features: list[str]) -> float:
    return 100.0 * float(np.mean(model.predict(test[features]) != test["class"].to_numpy()))


@needs_adult
def test_adult_baseline_error_matches_the_paper(adult: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    train, test = adult
    features = [c for c in train.columns if c != "class"]
    model = C45().fit(train[features], train["class"], ADULT_NUMERIC)
    assert _error(model, test, features) == pytest.approx(14.7, abs=1.0)
    # Pruning must have removed most of the grown tree (about 7,000 nodes unpruned).
    assert 100 < model.n_nodes < 2000


@needs_adult
def test_adult_upper_bound_error_matches_the_paper(
    adult: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    train, test = adult
    model = C45().fit(train[["martial-status"]], train["class"], set())
    assert _error(model, test, ["martial-status"]) == pytest.approx(24.5, abs=1.5)


@needs_adult
def test_tree_does_not_depend_on_row_order(adult: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    train = adult[0].iloc[:6000]
    features = [c for c in train.columns if c != "class"]
    shuffled = train.sample(frac=1.0, random_state=3)
    first = C45().fit(train[features], train["class"], ADULT_NUMERIC)
    again = C45().fit(train[features], train["class"], ADULT_NUMERIC)
    permuted = C45().fit(shuffled[features], shuffled["class"], ADULT_NUMERIC)
    assert first.n_nodes > 20
    assert first.to_text() == again.to_text() == permuted.to_text()
    test = adult[1]
    assert (first.predict(test) == permuted.predict(test)).all()
