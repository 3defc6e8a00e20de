"""C4.5 grown from counts (fedanon.utility.c45_counts) against the record-level C4.5 (the oracle):
the same tree node for node, pooled or over parties whose counts are added by secure sum."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from fedanon.crypto.simulate import dedup_union, ring_sum
from fedanon.errors import FedanonError
from fedanon.utility.benchmark_tables import has_table, load_table
from fedanon.utility.c45 import C45, _Node
from fedanon.utility.c45_counts import (
    CLASSES,
    HISTOGRAMS,
    SPLIT,
    FeatureKinds,
    FederatedOracle,
    LocalOracle,
    Query,
    agree_schema,
    fit_from_counts,
    local_domains,
)

Node = tuple[tuple[int, ...], int, float | None, int, tuple[float, ...], int]


def _nodes(model: C45) -> list[Node]:
    """Every stored node: (branch path, feature, threshold, branches, class counts, class)."""
    out: list[Node] = []
    stack: list[tuple[_Node, tuple[int, ...]]] = [(model._fitted_root(), ())]
    while stack:
        node, path = stack.pop()
        threshold = None if math.isnan(node.threshold) else node.threshold
        counts = tuple(node.counts.tolist())
        out.append((path, node.attr, threshold, node.n_branches, counts, node.best))
        stack.extend((c, (*path, b)) for b, c in sorted(node.children.items()))
    return sorted(out)


class _Recorder:
    """A party oracle that records the queries it answers."""

    def __init__(self, oracle: LocalOracle) -> None:
        self.oracle = oracle
        self.queries: list[Query] = []

    def count(self, queries: Sequence[Query]) -> np.ndarray:
        self.queries.extend(queries)
        return self.oracle.count(queries)


def _federated(
    X: pd.DataFrame,
    y: pd.Series,
    numeric: set[str],
    sizes: Sequence[int],
    seed: int = 0,
    secure: bool = False,
    **options: object,
) -> tuple[C45, FederatedOracle, list[_Recorder]]:
    """Split the rows at random into parties of `sizes`, agree on the domains, fit from the
    secure sum (ring mode, in process) of the parties' counts."""
    assert sum(sizes) == len(X)
    order = np.random.default_rng(seed).permutation(len(X))
    parts = np.split(order, np.cumsum(sizes)[:-1])
    kinds = FeatureKinds([str(c) for c in X.columns], frozenset(numeric))
    tables = [(X.iloc[p].reset_index(drop=True), y.iloc[p].reset_index(drop=True)) for p in parts]
    domains = [local_domains(px, py, kinds) for px, py in tables]
    schema = agree_schema(kinds, domains, dedup_union if secure else _plain)
    parties = [_Recorder(LocalOracle(px, py, schema)) for px, py in tables]
    oracle = FederatedOracle(parties, ring_sum if secure else _add)
    model = fit_from_counts(oracle, schema, **options)  # type: ignore[arg-type]
    return model, oracle, parties


def _plain(sets: Sequence[Sequence[bytes]]) -> list[bytes]:
    return sorted({v for s in sets for v in s})


def _add(vectors: Sequence[np.ndarray]) -> np.ndarray:
    return ring_sum(vectors).astype(np.int64)


def _table(name: str) -> tuple[pd.DataFrame, pd.Series, set[str]]:
    df = load_table(name)
    X = df.drop(columns=["class"])
    numeric = {c for c in X.columns if pd.to_numeric(X[c], errors="coerce").notna().all()}
    for c in numeric:
        X[c] = X[c].astype(float)
    return X, df["class"], numeric


def _assert_same_tree(X: pd.DataFrame, y: pd.Series, numeric: set[str], got: C45, **kw: object):
    expected = C45(**kw).fit(X, y, numeric)  # type: ignore[arg-type]
    assert _nodes(got) == _nodes(expected)
    assert got.to_text() == expected.to_text()
    assert (got.n_nodes, got.depth, got.n_leaves) == (
        expected.n_nodes,
        expected.depth,
        expected.n_leaves,
    )
    assert (got.predict(X) == expected.predict(X)).all()


def _raising_table() -> tuple[pd.DataFrame, pd.Series]:
    """test_c45's subtree-raising case: C4.5 replaces the root by its largest branch, whose
    leaves then hold rows that reached the root's other branch."""
    rows = [("x", "u", "N")] * 3 + [("x", "u", "P")] * 8 + [("x", "v", "N")] * 12
    rows += [("x", "v", "P")] * 6 + [("y", "u", "P")] * 5 + [("y", "v", "P")] * 1
    order = np.random.default_rng(7).permutation(len(rows))
    frame = pd.DataFrame([rows[i] for i in order], columns=["a", "b", "class"])
    return frame[["a", "b"]], frame["class"]


def test_subtree_raising_asks_for_counts_the_grown_tree_never_had() -> None:
    X, y = _raising_table()
    model, _oracle, parties = _federated(X, y, set(), [10, 15, 10])
    assert model.to_text().splitlines() == ["b = u: P (16/3)", "b = v: N (19/7)"]
    _assert_same_tree(X, y, set(), model)
    # Growing asked histograms only; the raised branch's test (b) at the root's path was
    # never a grown node's test, so pruning had to ask for its branch counts there.
    kinds = [q.kind for q in parties[0].queries]
    # The root, a=x and the first of its two impure children (no admissible test there):
    # the second's histograms are a=x's minus the first's; a=y is pure.
    assert kinds.count(HISTOGRAMS) == 3
    assert Query(((0, 0, None), (1, 1, None)), HISTOGRAMS) not in parties[0].queries
    assert Query((), SPLIT, 1, None) in parties[0].queries
    assert all(p.queries == parties[0].queries for p in parties)  # same questions to all


def test_a_child_counted_above_its_parent_is_refused_not_subtracted() -> None:
    """The last child's histograms are its parent's minus its siblings': an oracle whose
    first child holds more records than the parent (inconsistent counts) is refused instead
    of growing a tree from negative counts."""
    X, y = _raising_table()
    kinds = FeatureKinds(["a", "b"], frozenset())
    schema = agree_schema(kinds, [local_domains(X, y, kinds)])
    honest = LocalOracle(X, y, schema)

    class Inflating:
        def count(self, queries: Sequence[Query]) -> np.ndarray:
            answer = honest.count(queries)
            if queries and queries[0].path == ((0, 0, None), (1, 0, None)):
                answer = answer + 100  # the first child of a=x: 100 more of everything
            return answer

    with pytest.raises(FedanonError, match="more records than its parent"):
        fit_from_counts(Inflating(), schema)


def test_without_raising_no_count_beyond_growing_is_needed() -> None:
    X, y = _raising_table()
    model, _, parties = _federated(X, y, set(), [10, 15, 10], subtree_raising=False)
    _assert_same_tree(X, y, set(), model, subtree_raising=False)
    assert {q.kind for q in parties[0].queries} == {HISTOGRAMS}


@pytest.mark.parametrize("name", ["german", "glass", "nursery"])
@pytest.mark.parametrize("sizes", ["3", "5", "skewed"])
def test_uci_trees_equal_the_pooled_fit(name: str, sizes: str) -> None:
    if not has_table(name):
        pytest.skip(f"shared {name} data not present")
    X, y, numeric = _table(name)
    n = len(X)
    split = {
        "3": [n // 3, n // 3, n - 2 * (n // 3)],
        "5": [n // 5] * 4 + [n - 4 * (n // 5)],
        "skewed": [1, 3, n // 10, n - n // 10 - 4],
    }[sizes]
    for options in ({}, {"min_leaf": 25}, {"prune": False}):
        model, _, _ = _federated(X, y, numeric, split, **options)
        _assert_same_tree(X, y, numeric, model, **options)


@pytest.mark.parametrize("name", ["german", "glass", "pima"])
def test_narrowed_histograms_give_the_same_tree_from_fewer_counts(name: str) -> None:
    if not has_table(name):
        pytest.skip(f"shared {name} data not present")
    X, y, numeric = _table(name)
    n = len(X)
    split = [n // 10, n // 2, n - n // 2 - n // 10]
    _full, full_oracle, _ = _federated(X, y, numeric, split)
    narrow, narrow_oracle, parties = _federated(X, y, numeric, split, narrow=True)
    _assert_same_tree(X, y, numeric, narrow)
    assert narrow_oracle.counts_summed < full_oracle.counts_summed / 2
    # Below the root every histogram counts a numeric feature over the parent's values only.
    deeper = [q for q in parties[0].queries if q.kind == HISTOGRAMS and q.path]
    assert deeper and all(q.support is not None for q in deeper)


def test_pruning_asks_in_batches_by_height_not_per_node() -> None:
    """Growing takes a round per level; pruning one per height of the grown tree (plus the
    re-pruning of raised branches), not one per node whose raising it judges."""
    if not has_table("nursery"):
        pytest.skip("shared nursery data not present")
    X, y, numeric = _table("nursery")
    n = len(X)
    grown = C45(prune=False).fit(X, y, numeric)
    model, oracle, _ = _federated(X, y, numeric, [n // 3, n // 3, n - 2 * (n // 3)])
    _assert_same_tree(X, y, numeric, model)
    internal = grown.n_nodes - grown.n_leaves
    assert oracle.rounds <= 2 * (grown.depth + 1) < internal


def test_raised_branches_are_re_pruned_by_height_not_node_by_node() -> None:
    """When raising a node's largest branch wins, C4.5 re-prunes that branch on the node's
    records; the branches raised at one height are re-pruned together, a round per height of
    them. On 3,000 Adult rows (depth 17, many raises) the whole fit then stays within three
    rounds per level of the grown tree (asked node by node it took 75)."""
    if not has_table("adult"):
        pytest.skip("shared adult data not present")
    X, y, numeric = _table("adult")
    X, y = X.iloc[:3000], y.iloc[:3000]
    grown = C45(prune=False).fit(X, y, numeric)
    model, oracle, _ = _federated(X, y, numeric, [1000, 1000, 1000])
    _assert_same_tree(X, y, numeric, model)
    assert grown.depth == 17
    assert oracle.rounds <= 3 * (grown.depth + 1) + 2


def test_pruning_runs_disjoint_subtrees_side_by_side_not_height_by_height() -> None:
    """Pruning decides disjoint subtrees independently, so each round carries what every
    waiting subtree needs next (its raising's counts, the re-pruning of a raised branch): the
    rounds follow the longest chain of dependent decisions. On the whole Adult table (depth
    21, three parties) the fit takes at most 2.5 rounds per level of the grown tree (82 when
    every height, and every re-pruning inside it, waited for the one before)."""
    if not has_table("adult"):
        pytest.skip("shared adult data not present")
    X, y, numeric = _table("adult")
    n = len(X)
    grown = C45(prune=False).fit(X, y, numeric)
    model, oracle, _ = _federated(X, y, numeric, [n // 2, n // 3, n - n // 2 - n // 3])
    _assert_same_tree(X, y, numeric, model)
    assert grown.depth == 21
    assert oracle.rounds <= 2.5 * (grown.depth + 1)


def test_secure_union_and_ring_sum_give_the_pooled_tree() -> None:
    """The agreed domains through the commutative-encryption union (no party's values shown
    to the leader as its own), the counts through the ring secure sum."""
    if not has_table("pima"):
        pytest.skip("shared pima data not present")
    X, y, numeric = _table("pima")
    X, y = X.iloc[:90, :3], y.iloc[:90]
    numeric = set(X.columns)
    model, oracle, _ = _federated(X, y, numeric, [60, 25, 5], secure=True, min_leaf=5)
    _assert_same_tree(X, y, numeric, model, min_leaf=5)
    assert oracle.rounds > 1


def test_a_party_without_rows_adds_nothing() -> None:
    X, y = _raising_table()
    model, _, _ = _federated(X, y, set(), [0, 35, 0])
    _assert_same_tree(X, y, set(), model)


def test_values_sort_as_the_pooled_table_sorts_them() -> None:
    # Ints, floats and strings each keep their type through the union, so the domains sort
    # as pandas sorts the pooled column (10 after 9, not before '9').
    X = pd.DataFrame({"i": [10, 9, 9, 10, 2, 2] * 4, "s": ["b", "a", "c", "a", "b", "c"] * 4})
    y = pd.Series(["P", "N", "N", "P", "P", "N"] * 4)
    model, _, _ = _federated(X, y, set(), [6, 6, 12], prune=False, min_leaf=1)
    _assert_same_tree(X, y, set(), model, prune=False, min_leaf=1)
    assert model._domains[0].tolist() == [2, 9, 10]


def test_mixed_types_order_as_in_the_pooled_table() -> None:
    # pandas orders a mixed column (numbers before text); the union keeps every value's type,
    # so the agreed domain has the pooled order.
    X = pd.DataFrame({"v": pd.Series([1, "a", 2, "b"] * 5, dtype=object)})
    y = pd.Series(["P", "N", "N", "P"] * 5)
    model, _, _ = _federated(X, y, set(), [3, 7, 10], prune=False, min_leaf=1)
    _assert_same_tree(X, y, set(), model, prune=False, min_leaf=1)
    assert model._domains[0].tolist() == [1, 2, "a", "b"]


def test_a_party_value_outside_the_agreed_domain_is_refused() -> None:
    kinds = FeatureKinds(["x"], frozenset({"x"}))
    schema = agree_schema(
        kinds, [local_domains(pd.DataFrame({"x": [1.0, 2.0]}), pd.Series(["a", "b"]), kinds)]
    )
    with pytest.raises(FedanonError, match="outside the agreed domain"):
        LocalOracle(pd.DataFrame({"x": [1.5]}), pd.Series(["a"]), schema)


def test_a_wrong_length_answer_is_refused() -> None:
    X, y = _raising_table()
    kinds = FeatureKinds(["a", "b"], frozenset())
    schema = agree_schema(kinds, [local_domains(X, y, kinds)])

    class Short:
        def count(self, queries: Sequence[Query]) -> np.ndarray:
            return np.zeros(1, dtype=np.int64)

    with pytest.raises(FedanonError, match="answered 1 counts"):
        fit_from_counts(Short(), schema)


def test_class_queries_count_exactly_the_matching_records() -> None:
    X, y = _raising_table()
    kinds = FeatureKinds(["a", "b"], frozenset())
    schema = agree_schema(kinds, [local_domains(X, y, kinds)])
    oracle = LocalOracle(X, y, schema)
    # a = x (branch 0), b = v (branch 1): 12 N and 6 P.
    assert oracle.count([Query(((0, 0, None), (1, 1, None)), CLASSES)]).tolist() == [12, 6]


@pytest.mark.slow
@pytest.mark.parametrize("sizes", ["3", "5", "skewed"])
def test_adult_tree_equals_the_pooled_fit(sizes: str) -> None:
    if not has_table("adult"):
        pytest.skip("shared Adult data not present")
    X, y, numeric = _table("adult")
    n = len(X)
    split = {
        "3": [n // 3, n // 3, n - 2 * (n // 3)],
        "5": [n // 5] * 4 + [n - 4 * (n // 5)],
        "skewed": [2, n // 20, n - n // 20 - 2],
    }[sizes]
    model, _, _ = _federated(X, y, numeric, split)
    _assert_same_tree(X, y, numeric, model)
    kactus_like, _, _ = _federated(X, y, numeric, split, min_leaf=50, narrow=True)
    _assert_same_tree(X, y, numeric, kactus_like, min_leaf=50)


def test_the_leader_chooses_a_whole_level_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Growing decides every open node of a level in one vectorized choice, not node by node:
    one call per level that has a node to split, over all of that level's nodes."""
    if not has_table("german"):
        pytest.skip("shared german data not present")
    from fedanon.utility import c45_counts

    X, y, numeric = _table("german")
    n = len(X)
    calls: list[int] = []
    choose = c45_counts.choose_splits

    def counting(gain: np.ndarray, *rest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        calls.append(len(gain))
        return choose(gain, *rest)

    monkeypatch.setattr(c45_counts, "choose_splits", counting)
    model, _, _ = _federated(X, y, numeric, [n // 3, n // 3, n - 2 * (n // 3)], prune=False)
    grown = C45(prune=False).fit(X, y, numeric)
    _assert_same_tree(X, y, numeric, model, prune=False)
    assert len(calls) <= grown.depth + 1
    assert max(calls) > 1  # a level's nodes together
    assert sum(calls) >= grown.n_nodes - grown.n_leaves  # every split node was examined


def test_a_level_wide_choice_is_each_node_choice_float_for_float() -> None:
    """`choose_splits` over many nodes picks, per node, what C4.5's rule picks on that node
    alone (the record-level fit's original one-node arithmetic, written out here): the
    average gain over 8 and more attributes (numpy sums those in blocks) and exact ties
    included."""
    from fedanon.utility.c45 import choose_splits

    def choose_split(
        gain: np.ndarray, split_info: np.ndarray, thresholds: np.ndarray, in_average: np.ndarray
    ) -> tuple[int, float] | None:
        possible = gain > -1e-3
        averaged = possible & in_average
        average = gain[averaged].mean() if averaged.any() else 1e6
        eligible = possible & (gain >= average - 1e-3) & (split_info > 1e-3)
        worth = np.where(eligible, gain / np.where(eligible, split_info, 1.0), -1e-3)
        best = int(np.argmax(worth))
        return None if worth[best] <= -1e-3 else (best, float(thresholds[best]))

    rng = np.random.default_rng(7)
    nodes, features = 400, 14
    gain = rng.choice([-1e-3, 0.01, 0.02, 0.1 / 3, 0.2, 0.7], size=(nodes, features))
    gain[::3] += rng.random((len(gain[::3]), features)) * 1e-9
    split_info = rng.choice([0.0, 0.5, 1.0, 1 / 3, 2.0], size=(nodes, features))
    thresholds = rng.random((nodes, features))
    in_average = rng.random(features) < 0.8
    chosen, picked = choose_splits(gain, split_info, thresholds, in_average)
    for i in range(nodes):
        alone = choose_split(gain[i].copy(), split_info[i].copy(), thresholds[i], in_average)
        together = None if chosen[i] < 0 else (int(chosen[i]), float(picked[i]))
        assert together == alone
    assert (chosen < 0).any() and (chosen >= 0).any()


def test_no_count_is_asked_twice_over_a_fit() -> None:
    """Growing, pruning and raising ask each count (a path's class counts, a test's branch
    counts at a path) at most once: pruning's tasks ask only what the fit does not hold yet
    (asking again every grown node's own test took 100 more counts on 3,000 Adult rows)."""
    if not has_table("adult"):
        pytest.skip("shared adult data not present")
    X, y, numeric = _table("adult")
    X, y = X.iloc[:3000], y.iloc[:3000]
    model, _oracle, parties = _federated(X, y, numeric, [1000, 1000, 1000])
    _assert_same_tree(X, y, numeric, model)
    asked = [(q.path, q.kind, q.feature, q.threshold) for q in parties[0].queries]
    assert asked and len(set(asked)) == len(asked)
