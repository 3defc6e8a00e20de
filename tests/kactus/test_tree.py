"""Phase 1: the exported C4.5 tree, and records placed by evaluating their paths."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fedanon.algorithms.kactus.tree import Condition, induce, place_records
from fedanon.algorithms.tabular import encode_qid
from fedanon.utility.c45 import C45, TreeNode


def test_exported_tree_mirrors_the_fitted_tests():
    x = pd.DataFrame({"colour": ["red"] * 20 + ["blue"] * 20 + ["green"] * 2})
    y = pd.Series(["p"] * 20 + ["q"] * 20 + ["p"] * 2)
    tree = C45(min_leaf=2).fit(x, y, numeric=[]).tree()
    assert tree.feature == "colour" and not tree.numeric
    assert sorted(tree.children) == ["blue", "green", "red"]
    assert {k: c.rows for k, c in tree.children.items()} == {"blue": 20, "green": 2, "red": 20}
    assert all(child.is_leaf for child in tree.children.values())


def test_numeric_test_has_a_threshold_and_two_sides():
    x = pd.DataFrame({"age": list(range(20, 60))})
    y = pd.Series(["young"] * 20 + ["old"] * 20)
    tree = C45(min_leaf=5).fit(x, y, numeric=["age"]).tree()
    assert tree.numeric and 39 <= tree.threshold <= 40
    assert set(tree.children) == {False, True}


def test_records_follow_their_paths_and_missing_values_go_to_the_root_residual():
    colour = encode_qid(pd.Series(["red", "blue", None, "red", "", "blue"]), "colour")
    age = encode_qid(pd.Series(["30", "70", "50", "", "40", "20"]), "age")
    red, blue = colour.categories.tolist().index("red"), colour.categories.tolist().index("blue")
    young, old = TreeNode(None), TreeNode(None)
    by_age = TreeNode("age", numeric=True, threshold=45.0, children={False: young, True: old})
    tree = TreeNode("colour", children={red: by_age, blue: TreeNode(None)})
    root, residual = place_records(tree, [colour, age])
    # rows 2 and 4 (colour missing: None, empty) follow no branch; row 3 reaches the age
    # test with no age
    assert residual.tolist() == [2, 3, 4]
    red_node = next(c for c in root.children if c.path[-1].value == "red")
    young_node, old_node = red_node.children
    assert young_node.path == (Condition("colour", True, "red"), Condition("age", False, 45.0))
    assert young_node.rows.tolist() == [0] and old_node.rows.tolist() == []
    blue_node = next(c for c in root.children if c.path[-1].value == "blue")
    assert blue_node.rows.tolist() == [1, 5]


def test_induce_ignores_incomplete_records_when_fitting():
    rng = np.random.default_rng(0)
    values = rng.choice(["a", "b"], 200)
    labels = pd.Series(np.where(values == "a", "x", "y"))
    values = values.astype(object)
    values[:50] = None  # incomplete records do not stop the fit
    tree = induce([encode_qid(pd.Series(values), "v")], labels, k=10)
    assert tree.feature == "v" and sum(c.rows for c in tree.children.values()) == 150
    assert math.isnan(tree.threshold)
