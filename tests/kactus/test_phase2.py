"""Phase 2 of kACTUS on hand-made trees: every branch of the pruning and release rules."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedanon.algorithms.kactus.api import _released_cells
from fedanon.algorithms.kactus.phase2 import Group, prune_and_release
from fedanon.algorithms.kactus.tree import Condition, Node
from fedanon.algorithms.tabular import encode_qid

EMPTY = np.empty(0, dtype=np.intp)


def leaf(path: tuple[Condition, ...], start: int, size: int) -> Node:
    return Node(path, rows=np.arange(start, start + size))


def eq(value: str, feature: str = "a") -> Condition:
    return Condition(feature, True, value)


def by_path(groups: list[Group]) -> dict[tuple[Condition, ...], np.ndarray]:
    return {g.path: g.rows for g in groups}


def test_complying_children_release_everything_and_leave_an_empty_leaf():
    a, b = leaf((eq("x"),), 0, 7), leaf((eq("y"),), 7, 5)
    root = Node((), [a, b])
    out = prune_and_release(root, EMPTY, 5, np.random.default_rng(0))
    groups = by_path(out.groups)
    assert sorted(groups[(eq("x"),)]) == list(range(7))  # k records + 2 surplus, all released
    assert sorted(groups[(eq("y"),)]) == list(range(7, 12))
    assert out.donated == 0 and len(out.dropped) == 0
    assert root.is_leaf and len(root.rows) == 0


def test_donation_when_surplus_covers_what_the_non_complying_leaves_lack():
    # k=5: child x has 9 (4 surplus), child y has 2, child z has 1 -> nui 3, required 2.
    x, y, z = leaf((eq("x"),), 0, 9), leaf((eq("y"),), 9, 2), leaf((eq("z"),), 11, 1)
    p = Node((eq("p", "b"),), [x, y, z])
    root = Node((), [p, leaf((eq("q", "b"),), 20, 3)])
    out = prune_and_release(root, EMPTY, 5, np.random.default_rng(1))
    released_x = by_path(out.groups)[(eq("x"),)]
    assert len(released_x) == 7 and set(released_x) <= set(range(9))
    assert out.donated == 2
    # p pruned to a leaf of exactly k = 5 records (3 of its own + 2 donated from x), released
    # at the root with p's path; the root's other child (3 < k) is then non-complying and its
    # 3 records cannot be helped (p has no surplus), so they end in the root leaf: dropped.
    released_p = by_path(out.groups)[(eq("p", "b"),)]
    donated = set(range(9)) - set(released_x)
    assert set(released_p) == {9, 10, 11} | donated
    assert sorted(out.dropped) == [20, 21, 22]


def test_no_donation_when_surplus_is_too_small():
    # k=5: x has 6 (1 surplus), y has 2 -> required 3 > 1: nothing moves, x releases all 6.
    x, y = leaf((eq("x"),), 0, 6), leaf((eq("y"),), 6, 2)
    root = Node((), [x, y])
    out = prune_and_release(root, EMPTY, 5, np.random.default_rng(2))
    assert sorted(by_path(out.groups)[(eq("x"),)]) == list(range(6))
    assert out.donated == 0
    assert sorted(out.dropped) == [6, 7]  # the root leaf keeps 2 < k records


def test_no_donation_when_non_complying_leaves_already_reach_k():
    # k=3: x has 5 (2 surplus); y, z, w hold 1 + 1 + 2 = 4 >= k: no donation.
    children = [
        leaf((eq("x"),), 0, 5),
        leaf((eq("y"),), 5, 1),
        leaf((eq("z"),), 6, 1),
        leaf((eq("w"),), 7, 2),
    ]
    root = Node((), children)
    out = prune_and_release(root, EMPTY, 3, np.random.default_rng(3))
    groups = by_path(out.groups)
    assert sorted(groups[(eq("x"),)]) == list(range(5))
    assert sorted(groups[()]) == [5, 6, 7, 8]  # root leaf >= k: released fully suppressed
    assert out.donated == 0 and len(out.dropped) == 0


def test_root_residual_joins_the_root_leaf_and_is_released_when_it_reaches_k():
    root = Node((), [leaf((eq("x"),), 0, 4), leaf((eq("y"),), 4, 1)])
    residual = np.array([10, 11])
    out = prune_and_release(root, residual, 3, np.random.default_rng(4))
    assert sorted(by_path(out.groups)[()]) == [4, 10, 11]
    assert len(out.dropped) == 0


def test_root_residual_below_k_is_dropped():
    root = Node((), [leaf((eq("x"),), 0, 4)])
    out = prune_and_release(root, np.array([9]), 3, np.random.default_rng(5))
    assert sorted(out.dropped) == [9]
    assert [len(g.rows) for g in out.groups] == [4]


def test_a_single_leaf_tree_is_released_fully_suppressed():
    out = prune_and_release(leaf((), 0, 6), EMPTY, 3, np.random.default_rng(6))
    assert [(g.path, sorted(g.rows)) for g in out.groups] == [((), list(range(6)))]


def test_same_generator_seed_gives_the_same_donation():
    def run(seed: int) -> list[list[int]]:
        root = Node(
            (), [leaf((eq("x"),), 0, 30), leaf((eq("y"),), 30, 40), leaf((eq("z"),), 70, 2)]
        )
        out = prune_and_release(root, EMPTY, 10, np.random.default_rng(seed))
        return [sorted(g.rows.tolist()) for g in out.groups]

    assert run(7) == run(7)
    assert run(7) != run(8)  # the 8 donated records are drawn at random from 50 surplus


def test_released_cells_keep_equalities_one_value_for_inequalities_suppress_the_rest():
    df = pd.DataFrame(
        {
            "colour": ["red", "red", "red", "blue", "blue"],
            "age": ["30", "31", "35", "50", "60"],
            "zip": ["1", "2", "3", "4", "5"],
        }
    )
    colour, age, zipc = (encode_qid(df[c], c) for c in df.columns)
    path = (Condition("colour", True, "red"), Condition("age", False, 40.0, False))
    groups = [Group(np.array([0, 1, 2]), path), Group(np.array([3, 4]), ())]
    assert list(_released_cells(colour, groups, "?", "median")) == ["red"] * 3 + ["?", "?"]
    # mean of 30, 31, 35 is 32.0, written at the column's precision (whole numbers); median 31
    assert list(_released_cells(age, groups, "?", "mean")) == ["32", "32", "32", "?", "?"]
    assert list(_released_cells(age, groups, "?", "median")) == ["31", "31", "31", "?", "?"]
    # the paper's experimental protocol: each record's own value (no release)
    assert list(_released_cells(age, groups, "?", "original")) == ["30", "31", "35", "?", "?"]
    assert list(_released_cells(zipc, groups, "*", "median")) == ["*"] * 5


def test_group_value_keeps_the_column_precision():
    column = encode_qid(pd.Series(["1.25", "2.5", "3.0"]), "x")
    groups = [Group(np.array([0, 1, 2]), (Condition("x", False, 2.0, True),))]
    assert list(_released_cells(column, groups, "?", "mean")) == ["2.25"] * 3
    assert list(_released_cells(column, groups, "?", "median")) == ["2.50"] * 3


def test_donation_at_exactly_enough_surplus():
    # The paper's line 21, |S_extra| >= required: k=5, x has 7 records (2 surplus), y has 3
    # (nui 3, required 2). The 2 surplus records are exactly enough: both are donated, x
    # releases its k = 5, and the pruned node (here the root) holds 3 + 2 = 5 records,
    # released with every QID suppressed; nothing is dropped.
    x, y = leaf((eq("x"),), 0, 7), leaf((eq("y"),), 7, 3)
    out = prune_and_release(Node((), [x, y]), EMPTY, 5, np.random.default_rng(9))
    groups = by_path(out.groups)
    released_x = set(groups[(eq("x"),)].tolist())
    assert len(released_x) == 5 and released_x < set(range(7))
    assert out.donated == 2 and len(out.dropped) == 0
    assert set(groups[()].tolist()) == {7, 8, 9} | (set(range(7)) - released_x)


def test_no_donation_when_every_child_complies_whatever_the_surplus():
    # nui = 0 (docs/kactus.md, specs: "if nui = 0 ... release all surplus"): x has 8 and y 9
    # records with k=5, 7 surplus records in all (>= k), yet none is kept back: each child
    # releases all of its records and the root leaf is empty.
    x, y = leaf((eq("x"),), 0, 8), leaf((eq("y"),), 8, 9)
    out = prune_and_release(Node((), [x, y]), EMPTY, 5, np.random.default_rng(10))
    assert {p: sorted(r.tolist()) for p, r in by_path(out.groups).items()} == {
        (eq("x"),): list(range(8)),
        (eq("y"),): list(range(8, 17)),
    }
    assert out.donated == 0 and len(out.dropped) == 0
