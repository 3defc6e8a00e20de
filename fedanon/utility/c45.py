"""A C4.5-style decision-tree classifier in numpy, used to measure the utility of a release.

The LKC paper measures utility as the error of Quinlan's C4.5 (release 8) trained on the
generalized data. We need the same learner for CE, BE and UE to be comparable with the paper's
figures, and scikit-learn's CART is a different learner (binary splits on categories, no gain
ratio, cost-complexity instead of pessimistic pruning), so this module re-implements C4.5's
induction in numpy. What it does, and where it departs from C4.5 (see docs/evaluation.md):

- Split selection by gain ratio, but only among attributes whose information gain is at least
  the average gain of all attributes with a possible test (C4.5's guard against tests with a
  tiny split information). Attributes whose number of distinct values is at least 30% of the
  training rows are left out of that average, as in C4.5.
- A test is possible only if at least two of its branches hold ``min_leaf`` rows (C4.5's -m).
- Categorical attributes: one branch per value seen in the training data (multiway split).
  Branches that receive no training rows are leaves predicting the parent's majority class
  (stored implicitly, so a test on an attribute with thousands of values stays cheap).
- Numeric attributes: a binary test ``x <= t``, t the midpoint between adjacent distinct values
  (C4.5 uses the largest training value below the midpoint instead; on data the tree has seen
  both give the same partition). Each side must hold at least C4.5's MinSplit rows:
  ``0.1 * n / classes``, raised to ``min_leaf`` when it is below, otherwise capped at 25 (so a
  ``min_leaf`` above 25, as kACTUS uses, holds only while 10% of the rows per class is below
  it). The threshold maximizes the information gain minus log2(T) / n, T the
  number of admissible thresholds: C4.5 release 8's MDL correction, which keeps numeric
  attributes with many values from winning by chance. That corrected gain enters the gain
  ratio.
- A subtree that does not reduce training errors is collapsed into a leaf while growing.
- Pessimistic error-based pruning with confidence factor ``cf``: subtree replacement and C4.5's
  subtree raising (replace a node by its largest branch when that branch, re-fed with all the
  node's rows, has the lowest estimated error). The normal quantile for ``cf`` is computed
  exactly rather than interpolated from C4.5's table (0.674 vs 0.692 for cf=0.25).
- Unknown values at prediction time (NaN, or a category not seen in training) are sent down all
  branches with weights proportional to the training rows in each branch, and the class
  distributions of the leaves reached are summed, as C4.5 does.
- Missing values in the training data are rejected: releases and the benchmark data are complete,
  and C4.5's fractional training cases would complicate every count for no use here.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError, MissingColumnError

# C4.5's tolerance when comparing gains and training errors.
_EPSILON = 1e-3
# C4.5 prefers the simpler tree when estimated errors differ by at most this many cases.
_PRUNE_SLACK = 0.1
# A categorical attribute with at least this share of distinct values (relative to the training
# rows) does not count towards the average gain, as in C4.5.
_MANY_VALUES_SHARE = 0.3
# Upper clamp of the minimum number of rows on each side of a numeric threshold (C4.5).
_MAX_MIN_SPLIT = 25


class _Node:
    """One tree node; a leaf when ``attr`` is -1.

    Only branches that received training rows are stored in ``children`` (branch number ->
    node); a categorical test has one branch per training value, and on a many-valued attribute
    most are empty. An absent branch is C4.5's empty leaf: it predicts this node's class.
    """

    __slots__ = ("attr", "best", "children", "counts", "n_branches", "threshold")

    def __init__(self, counts: np.ndarray, best: int) -> None:
        self.counts = counts  # training rows per class that reached this node
        self.best = best  # class predicted here as a leaf, and by absent (empty) branches
        self.attr = -1  # index of the tested feature
        self.threshold = math.nan  # numeric tests only: branch 0 is value <= threshold
        self.n_branches = 0  # branches of the test, empty ones included
        self.children: dict[int, _Node] = {}

    def make_leaf(self) -> None:
        self.attr = -1
        self.threshold = math.nan
        self.n_branches = 0
        self.children = {}

    def become(self, other: _Node) -> None:
        """Take over `other`'s test and subtree (subtree raising)."""
        self.attr = other.attr
        self.threshold = other.threshold
        self.n_branches = other.n_branches
        self.children = other.children
        self.counts = other.counts
        self.best = other.best


@dataclass
class TreeNode:
    """A read-only copy of one node of a fitted tree, for algorithms that walk the tree
    themselves (kACTUS evaluates each record's path). A leaf has ``feature`` None.

    ``children`` maps a branch key to the child: the category for a categorical test (every
    training value, empty branches included as leaves with no training rows), and False
    (``value <= threshold``) / True (``value > threshold``) for a numeric test.
    """

    feature: str | None
    numeric: bool = False
    threshold: float = math.nan
    children: dict[object, TreeNode] = field(default_factory=dict)
    rows: int = 0  # training rows that reached the node

    @property
    def is_leaf(self) -> bool:
        return self.feature is None


class C45:
    """C4.5-style decision tree: gain ratio, multiway categorical splits, pessimistic pruning.

    Parameters mirror C4.5's command line: ``min_leaf`` is -m (default 2), ``cf`` is -c
    (default 0.25), ``prune=False`` keeps the unpruned tree. ``subtree_raising=False`` restricts
    pruning to subtree replacement (J48's -S), for comparison with learners that lack raising.
    """

    def __init__(
        self,
        min_leaf: int = 2,
        cf: float = 0.25,
        prune: bool = True,
        subtree_raising: bool = True,
    ) -> None:
        if min_leaf < 1:
            raise ValueError(f"min_leaf must be at least 1, got {min_leaf}")
        if not 0.0 < cf < 1.0:
            raise ValueError(f"cf must be in (0, 1), got {cf}")
        self.min_leaf = min_leaf
        self.cf = cf
        self.prune = prune
        self.subtree_raising = subtree_raising
        self._root: _Node | None = None

    # ------------------------------------------------------------------ fitting

    def fit(self, X: pd.DataFrame, y: pd.Series, numeric: Iterable[str]) -> C45:
        """Grow and prune a tree; columns in `numeric` get threshold tests, all others are
        categorical (a generalized release is all categorical: pass an empty set). With no
        feature columns at all the tree is a single leaf predicting the majority class."""
        self._encode_training(X, y, set(numeric))
        self._z2 = _squared_deviate(self.cf)
        self._grow()
        if self.prune:
            with _recursion_room(self._measure()[1]):
                self._estimate(self._fitted_root(), np.arange(len(self._y)), update=True)
        self.n_nodes, self.depth, self.n_leaves = self._measure()
        self._release_training_data()
        return self

    def _encode_training(self, X: pd.DataFrame, y: pd.Series, numeric: set[str]) -> None:
        """Encode every column once so that node statistics are integer counting."""
        if len(X) != len(y):
            raise FedanonError(f"C4.5: {len(X)} feature rows but {len(y)} class labels")
        if len(X) == 0:
            raise FedanonError("C4.5: no training rows")
        if X.columns.has_duplicates:
            raise FedanonError("C4.5: duplicate feature column names")
        unknown = sorted(set(numeric) - set(X.columns))
        if unknown:
            raise FedanonError(f"C4.5: numeric columns not among the features: {unknown}")
        for col in X.columns:
            _reject_missing(X[col], str(col))
        _reject_missing(y, "class")

        self.features_: list[str] = list(X.columns)
        self._is_numeric = np.array([c in numeric for c in X.columns], dtype=bool)
        self._column = np.zeros(len(self.features_), dtype=np.intp)  # position in cat/num block
        self._domains: list[pd.Index] = []
        self._num_values: list[np.ndarray] = []  # sorted distinct values per numeric column
        cat_codes: list[np.ndarray] = []
        num_ranks: list[np.ndarray] = []
        num_raw: list[np.ndarray] = []
        for j, col in enumerate(X.columns):
            if self._is_numeric[j]:
                values = _as_float(X[col], str(col))
                distinct, ranks = np.unique(values, return_inverse=True)
                self._column[j] = len(num_ranks)
                self._num_values.append(distinct)
                num_ranks.append(ranks)
                num_raw.append(values)
            else:
                codes, domain = _factorize(X[col])
                self._column[j] = len(cat_codes)
                self._domains.append(domain)
                cat_codes.append(codes)

        y_codes, classes = _factorize(y)
        self.classes_ = np.asarray(classes)
        self._y = y_codes.astype(np.intp)
        k = len(self.classes_)
        n = len(self._y)
        self._k = k
        self._cat_codes = _stack(cat_codes, n)
        # Row r's sort key on numeric column a is rank * k + class: sorting the keys of a
        # node's rows orders them by value and yields the class counts at every value
        # boundary, without an argsort and gathers. Stored column-major for row gathers.
        self._num_keys = np.ascontiguousarray((_stack(num_ranks, n) * k + self._y[:, None]).T)
        self._num_raw = np.column_stack(num_raw) if num_raw else np.empty((n, 0))
        sizes = np.array([len(d) for d in self._domains], dtype=np.intp)
        self._cat_starts = np.cumsum(sizes) - sizes
        # Row r's (attribute, value, class) bin is cat_keys[r, a]: one bincount per node.
        self._cat_keys = (self._cat_codes + self._cat_starts) * k + self._y[:, None]
        self._n_cat_bins = int(sizes.sum()) * k
        self._xlogx = xlogx_table(n)
        self._cat_features = np.flatnonzero(~self._is_numeric)
        self._num_features = np.flatnonzero(self._is_numeric)
        self._in_average = in_average_mask(self._is_numeric, sizes, n)

    def _install(
        self,
        features: list[str],
        is_numeric: np.ndarray,
        domains: list[pd.Index],
        num_values: list[np.ndarray],
        classes: pd.Index,
        root: _Node,
    ) -> C45:
        """Make this model predict with a tree grown from counts elsewhere
        (fedanon.utility.c45_counts): the same fitted state as :meth:`fit` leaves."""
        self.features_ = list(features)
        self._is_numeric = np.asarray(is_numeric, dtype=bool)
        numeric_before = np.cumsum(self._is_numeric) - self._is_numeric
        self._column = np.where(
            self._is_numeric, numeric_before, np.arange(len(features)) - numeric_before
        ).astype(np.intp)
        self._domains = list(domains)
        self._num_values = list(num_values)
        self.classes_ = np.asarray(classes)
        self._k = len(self.classes_)
        self._root = root
        self.n_nodes, self.depth, self.n_leaves = self._measure()
        return self

    def _release_training_data(self) -> None:
        """Drop the encoded training matrices: a fitted model keeps only the tree."""
        for name in ("_y", "_cat_codes", "_num_keys", "_num_raw", "_cat_keys", "_xlogx"):
            delattr(self, name)

    def _grow(self) -> None:
        """Grow the tree depth-first, then collapse subtrees that do not reduce training
        errors. Iterative, so deep trees cannot hit Python's recursion limit."""
        all_rows = np.arange(len(self._y))
        self._root = self._new_node(all_rows)
        created: list[_Node] = []
        stack: list[tuple[_Node, np.ndarray]] = [(self._root, all_rows)]
        while stack:
            node, rows = stack.pop()
            created.append(node)
            n = len(rows)
            if node.counts[node.best] == n or n < 2 * self.min_leaf:
                continue
            split = self._best_split(rows, node.counts)
            if split is None:
                continue
            node.attr, node.threshold = split
            node.n_branches = (
                2 if self._is_numeric[node.attr] else len(self._domains[self._column[node.attr]])
            )
            for branch, part in self._partition(node, rows):
                child = self._new_node(part)
                node.children[branch] = child
                stack.append((child, part))
        collapse_unhelpful(created)

    def _new_node(self, rows: np.ndarray) -> _Node:
        counts = np.bincount(self._y[rows], minlength=self._k).astype(np.float64)
        return _Node(counts, int(np.argmax(counts)))

    def _best_split(self, rows: np.ndarray, counts: np.ndarray) -> tuple[int, float] | None:
        """C4.5's choice: the highest gain ratio among tests whose gain is at least average."""
        base = base_information(counts, self._xlogx)
        n_feat = len(self.features_)
        if n_feat == 0:
            return None
        gain = np.full(n_feat, -_EPSILON)
        split_info = np.zeros(n_feat)
        thresholds = np.full(n_feat, math.nan)
        if len(self._cat_features):
            g, s = self._categorical_gains(rows, base)
            gain[self._cat_features] = g
            split_info[self._cat_features] = s
        if len(self._num_features):
            g, s, t = self._numeric_gains(rows, base)
            gain[self._num_features] = g
            split_info[self._num_features] = s
            thresholds[self._num_features] = t

        return choose_split(gain, split_info, thresholds, self._in_average)

    def _categorical_gains(self, rows: np.ndarray, base: float) -> tuple[np.ndarray, np.ndarray]:
        """Gain and split information of every categorical attribute, from one bincount."""
        n = len(rows)
        keys = self._cat_keys[rows]
        table = np.bincount(keys.ravel(), minlength=self._n_cat_bins).reshape(-1, self._k)
        return categorical_scores(table, self._cat_starts, n, base, self.min_leaf, self._xlogx)

    def _numeric_gains(
        self, rows: np.ndarray, base: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Best threshold of every numeric attribute: MDL-corrected gain, split information
        and threshold (gain -EPSILON when no threshold leaves enough rows on both sides).

        Only cuts between distinct values can be thresholds, so after sorting, the gain is
        evaluated at those boundaries alone (a few hundred for most attributes, not n).
        """
        n = len(rows)
        k = self._k
        m = len(self._num_values)
        first, last = numeric_cut_range(n, k, self.min_leaf)
        lo, hi = first - 1, last  # cut after sorted position i: left holds i + 1 rows
        if hi <= lo:
            return _no_numeric_split(m)
        keys = np.sort(self._num_keys[:, rows], axis=1)
        ranks = keys // k
        # (attribute, position) of every admissible cut, grouped by attribute.
        attr, pos = np.nonzero(ranks[:, lo:hi] != ranks[:, lo + 1 : hi + 1])
        if len(attr) == 0:
            return _no_numeric_split(m)
        pos += lo
        left_n = pos + 1
        classes = keys - ranks * k
        left = np.empty((len(pos), k), dtype=np.intp)
        left[:, k - 1] = left_n  # the last class's count is what the others leave
        for c in range(k - 1):
            left[:, c] = np.cumsum(classes == c, axis=1)[attr, pos]
            left[:, k - 1] -= left[:, c]
        total = np.bincount(self._y[rows], minlength=k)
        return numeric_scores(
            NumericCuts(attr, left_n, left, ranks[attr, pos], ranks[attr, pos + 1]),
            total,
            base,
            self._num_values,
            self._xlogx,
        )

    def _partition(self, node: _Node, rows: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """(branch, training rows) for every branch of `node`'s test that receives rows."""
        col = self._column[node.attr]
        if self._is_numeric[node.attr]:
            branches = (self._num_raw[rows, col] > node.threshold).astype(np.intp)
        else:
            branches = self._cat_codes[rows, col]
        return [(b, rows[positions]) for b, positions in _groups(branches)]

    # ------------------------------------------------------------------ pruning

    def _estimate(self, node: _Node, rows: np.ndarray, update: bool) -> float:
        """Estimated errors of the subtree at `node` on `rows`; with `update`, prune it.

        C4.5's EstimateErrors: a subtree becomes a leaf if the leaf's pessimistic error is
        no worse than the subtree's and than its largest branch's; otherwise it is replaced
        by its largest branch if that is no worse than the subtree (subtree raising).
        """
        n = len(rows)
        counts = np.bincount(self._y[rows], minlength=self._k).astype(np.float64)
        best, leaf_estimate = leaf_estimate_of(node.best, counts, n, self.cf, self._z2)
        if update:
            node.counts = counts
            node.best = best
        if node.attr < 0:
            return leaf_estimate

        tree_estimate = 0.0
        largest: _Node | None = None
        largest_n = -1
        for branch, part in self._partition(node, rows):
            child = node.children.get(branch)
            if child is None:
                # An empty branch that receives rows after subtree raising: C4.5's empty
                # leaf, predicting this node's class.
                child = _Node(np.zeros(self._k), node.best)
                if update:
                    node.children[branch] = child
            if len(part) >= largest_n:
                largest, largest_n = child, len(part)
            tree_estimate += self._estimate(child, part, update)
        if not update:
            return tree_estimate

        assert largest is not None  # an internal node always has rows in some branch
        if not self.subtree_raising:
            branch_estimate = math.inf
        elif largest.attr < 0:
            # A leaf fed all the node's rows predicts their majority, exactly like the
            # node turned into a leaf: raising it can never win, so skip the pass.
            branch_estimate = leaf_estimate
        else:
            branch_estimate = self._estimate(largest, rows, update=False)
        choice = prune_choice(leaf_estimate, branch_estimate, tree_estimate)
        if choice == LEAF:
            node.make_leaf()
            return leaf_estimate
        if choice == RAISE:
            raised = self._estimate(largest, rows, update=True)
            node.become(largest)
            return raised
        return tree_estimate

    # ------------------------------------------------------------------ prediction

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """Predicted class labels for the rows of `X` (columns matched by name)."""
        proba = self._class_weights(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def _class_weights(self, X: pd.DataFrame) -> np.ndarray:
        """Per row, the summed class distributions of the leaves it reaches (C4.5's
        ClassSum); a row with an unknown value at a test reaches several leaves."""
        root = self._fitted_root()
        missing = [c for c in self.features_ if c not in X.columns]
        if missing:
            raise MissingColumnError(f"C4.5: columns missing for prediction: {missing}")
        n = len(X)
        codes = np.full((n, len(self._domains)), -1, dtype=np.intp)
        values = np.full((n, len(self._num_values)), math.nan)
        for j, name in enumerate(self.features_):
            col = self._column[j]
            if self._is_numeric[j]:
                values[:, col] = _as_float(X[name], name)
            else:
                codes[:, col] = self._domains[col].get_indexer(X[name])
        out = np.zeros((n, len(self.classes_)))
        stack: list[tuple[_Node, np.ndarray, np.ndarray]] = [(root, np.arange(n), np.ones(n))]
        while stack:
            node, rows, weights = stack.pop()
            if node.attr < 0:
                total = node.counts.sum()
                if total > 0:
                    out[rows] += weights[:, None] * (node.counts / total)
                else:
                    out[rows, node.best] += weights
                continue
            col = self._column[node.attr]
            if self._is_numeric[node.attr]:
                x = values[rows, col]
                branches = np.where(np.isnan(x), -1, (x > node.threshold).astype(np.intp))
            else:
                branches = codes[rows, col]
            for branch, positions in _groups(branches):
                if branch >= 0:
                    child = node.children.get(branch)
                    if child is None:  # empty leaf
                        out[rows[positions], node.best] += weights[positions]
                    else:
                        stack.append((child, rows[positions], weights[positions]))
                    continue
                # Unknown value: down every branch, weighted by its share of training rows.
                totals = {b: child.counts.sum() for b, child in node.children.items()}
                grand_total = sum(totals.values())
                for b, child in node.children.items():
                    if totals[b] > 0:
                        share = totals[b] / grand_total
                        stack.append((child, rows[positions], weights[positions] * share))
        return out

    def _fitted_root(self) -> _Node:
        if self._root is None:
            raise RuntimeError("C45 is not fitted; call fit() first")
        return self._root

    # ------------------------------------------------------------------ inspection

    def _measure(self) -> tuple[int, int, int]:
        """(nodes, depth, leaves) of the current tree; depth counts edges (a stump is 0)."""
        nodes = leaves = depth = 0
        stack = [(self._fitted_root(), 0)]
        while stack:
            node, level = stack.pop()
            empty = node.n_branches - len(node.children)  # empty leaves count, as in C4.5
            nodes += 1 + empty
            leaves += empty + (node.attr < 0)
            depth = max(depth, level + (empty > 0))
            stack.extend((child, level + 1) for child in node.children.values())
        return nodes, depth, leaves

    def tree(self) -> TreeNode:
        """A copy of the fitted tree as plain :class:`TreeNode` objects (iterative: deep trees
        cannot hit the recursion limit)."""
        root = self._fitted_root()
        copy = TreeNode(None, rows=int(root.counts.sum()))
        stack = [(root, copy)]
        while stack:
            node, out = stack.pop()
            if node.attr < 0:
                continue
            out.feature = self.features_[node.attr]
            out.numeric = bool(self._is_numeric[node.attr])
            out.threshold = node.threshold
            if out.numeric:
                keys: list[object] = [False, True]
            else:
                keys = list(self._domains[self._column[node.attr]])
            for branch, key in enumerate(keys):
                child = node.children.get(branch)
                rows = 0 if child is None else int(child.counts.sum())
                out.children[key] = TreeNode(None, rows=rows)
                if child is not None:
                    stack.append((child, out.children[key]))
        return copy

    def to_text(self) -> str:
        """The tree in C4.5's indented text form, with (training rows/errors) per leaf."""
        root = self._fitted_root()
        if root.attr < 0:
            return self._leaf_text(root)
        lines: list[str] = []
        stack: list[str | tuple[_Node, int]] = [(root, 0)]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                lines.append(item)
                continue
            node, level = item
            name = self.features_[node.attr]
            if self._is_numeric[node.attr]:
                labels = [f"{name} <= {node.threshold:g}", f"{name} > {node.threshold:g}"]
            else:
                labels = [f"{name} = {v}" for v in self._domains[self._column[node.attr]]]
            entries: list[str | tuple[_Node, int]] = []
            for branch, label in enumerate(labels):
                prefix = "|   " * level + label
                child = node.children.get(branch)
                if child is None:
                    entries.append(f"{prefix}: {self.classes_[node.best]} (0/0)")
                elif child.attr < 0:
                    entries.append(f"{prefix}: {self._leaf_text(child)}")
                else:
                    entries.extend([f"{prefix}:", (child, level + 1)])
            stack.extend(reversed(entries))
        return "\n".join(lines)

    def _leaf_text(self, node: _Node) -> str:
        total = node.counts.sum()
        errors = total - node.counts[node.best]
        return f"{self.classes_[node.best]} ({total:g}/{errors:g})"


# ---------------------------------------------------------------------- shared with c45_counts
# C4.5's decisions computed from counts alone. The record-level fitter above and the
# count-driven fitter (fedanon.utility.c45_counts, which only sees sums of counts) both call
# them, so the two cannot drift apart: the same integers give the same floats, hence the same
# tree.

# What pruning does with a node (prune_choice).
LEAF, RAISE, KEEP = "leaf", "raise", "keep"


def base_information(counts: np.ndarray, xlogx: np.ndarray) -> float:
    """Entropy of a node's class counts, in bits (n * log2 n looked up in `xlogx`)."""
    n = int(counts.sum())
    return float((xlogx[n] - xlogx[counts.astype(np.intp)].sum()) / n)


def xlogx_table(n: int) -> np.ndarray:
    """c * log2(c) for every count c in 0..n, so that entropies need no logarithm per node."""
    counts = np.arange(n + 1, dtype=np.float64)
    return counts * np.log2(np.maximum(counts, 1.0))


def categorical_scores(
    table: np.ndarray,
    starts: np.ndarray,
    n: int | np.ndarray,
    base: float | np.ndarray,
    min_leaf: int,
    xlogx: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Gain and split information of every categorical attribute at a node.

    `table` holds the node's (value x class) counts of all categorical attributes stacked,
    attribute a's values starting at row ``starts[a]``. A test is possible only when two of
    its branches hold `min_leaf` rows (gain -EPSILON otherwise). Several nodes' tables stacked
    score in one call with `n` and `base` given per start (the federated learner's level).
    """
    per_value = table.sum(axis=1)
    value_info = xlogx[per_value] - xlogx[table].sum(axis=1)  # n_v * entropy(v)
    info = np.add.reduceat(value_info, starts) / n
    split_info = (xlogx[n] - np.add.reduceat(xlogx[per_value], starts)) / n
    reasonable = np.add.reduceat((per_value >= min_leaf).astype(np.intp), starts)
    gain = np.where(reasonable >= 2, base - info, -_EPSILON)
    return gain, split_info


def numeric_cut_range(n: int, k: int, min_leaf: int) -> tuple[int, int]:
    """(fewest, most) rows the left side of a numeric cut may hold at a node of `n` rows.

    C4.5's MinSplit: 10% of the rows per class, at least `min_leaf`, else capped at 25; each
    side holds at least that many. No cut is possible when fewest > most.
    """
    min_split = 0.1 * n / k
    if min_split <= min_leaf:
        min_split = min_leaf
    elif min_split > _MAX_MIN_SPLIT:
        min_split = _MAX_MIN_SPLIT
    return math.ceil(min_split), math.floor(n - min_split)


@dataclass
class NumericCuts:
    """The admissible cuts of every numeric attribute at a node, grouped by attribute in
    increasing value order: a cut separates the node's rows with value <= ``values[a][low]``
    from those with value >= ``values[a][high]`` (adjacent distinct values at the node)."""

    attr: np.ndarray  # numeric attribute of each cut (non-decreasing)
    left_n: np.ndarray  # rows on the left side
    left: np.ndarray  # (cuts, classes): left rows per class
    low: np.ndarray  # rank of the largest value on the left
    high: np.ndarray  # rank of the smallest value on the right


def numeric_scores(
    cuts: NumericCuts,
    total: np.ndarray,
    base: float,
    values: list[np.ndarray],
    xlogx: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MDL-corrected gain, split information and threshold of the best cut of every numeric
    attribute (gain -EPSILON where none is admissible); `total` is the node's class counts.

    The gain of a cut is the information gain minus log2(T) / n, T the attribute's number
    of admissible cuts (C4.5 release 8); the first best cut in value order wins.
    """
    m = len(values)
    gain = np.full(m, -_EPSILON)
    split_info = np.zeros(m)
    thresholds = np.full(m, math.nan)
    if len(cuts.attr) == 0:
        return gain, split_info, thresholds
    n = int(total.sum())
    left_n = cuts.left_n
    info_n = xlogx[left_n] + xlogx[n - left_n]
    for c in range(len(total)):
        left = cuts.left[:, c]
        info_n -= xlogx[left] + xlogx[total[c] - left]
    bounds = np.searchsorted(cuts.attr, np.arange(m + 1))  # attr is sorted
    tries = np.diff(bounds)
    corrected = base - info_n / n - np.log2(np.maximum(tries, 1))[cuts.attr] / n
    for a in np.flatnonzero(tries):
        # C4.5 scans cuts left to right and keeps the first best one.
        cut = bounds[a] + int(np.argmax(corrected[bounds[a] : bounds[a + 1]]))
        if corrected[cut] <= 0:
            continue
        gain[a] = corrected[cut]
        split_info[a] = (xlogx[n] - xlogx[left_n[cut]] - xlogx[n - left_n[cut]]) / n
        low, high = values[a][cuts.low[cut]], values[a][cuts.high[cut]]
        middle = low + (high - low) / 2.0
        thresholds[a] = middle if middle < high else low
    return gain, split_info, thresholds


def grouped_numeric_scores(
    cuts: NumericCuts,
    n: np.ndarray,
    total: np.ndarray,
    base: np.ndarray,
    attribute: np.ndarray,
    values: list[np.ndarray],
    xlogx: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best cut of each group of cuts: (MDL-corrected gain, split information, threshold)
    per group, gain -EPSILON where a group has no admissible cut.

    A group is one numeric attribute at one node: ``cuts.attr`` holds each cut's group (non-
    decreasing), and per group `n` the node's rows, `total` its class counts, `base` its
    entropy and `attribute` the attribute's position in `values`: :func:`numeric_scores` of
    many nodes at once, element by element the same arithmetic (so the same floats), for the
    federated learner's level; the record-level fit keeps the one-node function, which is
    faster for one node (tests/utility/test_c45_counts.py pins the two trees equal).
    """
    groups = len(n)
    gain = np.full(groups, -_EPSILON)
    split_info = np.zeros(groups)
    thresholds = np.full(groups, math.nan)
    if len(cuts.attr) == 0:
        return gain, split_info, thresholds
    group = cuts.attr
    n_cut = n[group]
    left_n = cuts.left_n
    info_n = xlogx[left_n] + xlogx[n_cut - left_n]
    for c in range(total.shape[1]):
        left = cuts.left[:, c]
        info_n -= xlogx[left] + xlogx[total[group, c] - left]
    bounds = np.searchsorted(group, np.arange(groups + 1))  # groups are sorted
    tries = np.diff(bounds)
    corrected = base[group] - info_n / n_cut - np.log2(np.maximum(tries, 1))[group] / n_cut
    # C4.5 scans cuts left to right and keeps the first best one: per group, the first cut
    # reaching the group's maximum.
    some = np.flatnonzero(tries)
    best = np.full(groups, -np.inf)
    best[some] = np.maximum.reduceat(corrected, bounds[some])
    at_best = np.flatnonzero(corrected == best[group])
    firsts = at_best[np.r_[True, group[at_best[1:]] != group[at_best[:-1]]]]
    firsts = firsts[corrected[firsts] > 0]
    won = group[firsts]
    gain[won] = corrected[firsts]
    n_won = n[won]
    split_info[won] = (xlogx[n_won] - xlogx[left_n[firsts]] - xlogx[n_won - left_n[firsts]]) / n_won
    for a in np.unique(attribute[won]):
        mine = attribute[won] == a
        cut = firsts[mine]
        low, high = values[a][cuts.low[cut]], values[a][cuts.high[cut]]
        middle = low + (high - low) / 2.0
        thresholds[won[mine]] = np.where(middle < high, middle, low)
    return gain, split_info, thresholds


def _no_numeric_split(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.full(m, -_EPSILON), np.zeros(m), np.full(m, math.nan)


def choose_split(
    gain: np.ndarray, split_info: np.ndarray, thresholds: np.ndarray, in_average: np.ndarray
) -> tuple[int, float] | None:
    """C4.5's choice: the highest gain ratio among tests whose gain is at least the average
    gain of the possible tests (over the attributes marked `in_average`); None: no test."""
    possible = gain > -_EPSILON
    averaged = possible & in_average
    average = gain[averaged].mean() if averaged.any() else 1e6
    eligible = possible & (gain >= average - _EPSILON) & (split_info > _EPSILON)
    worth = np.where(eligible, gain / np.where(eligible, split_info, 1.0), -_EPSILON)
    best = int(np.argmax(worth))
    if worth[best] <= -_EPSILON:
        return None
    return best, float(thresholds[best])


def choose_splits(
    gain: np.ndarray, split_info: np.ndarray, thresholds: np.ndarray, in_average: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`choose_split` of every row (node) of (node x attribute) scores at once: per
    node the chosen attribute (-1: no test) and its threshold (the federated learner's level;
    tests/utility/test_c45_counts.py pins it to the one-node rule).

    The average gain is summed over each node's averaged gains packed to the left of a row
    of their own count, which numpy sums as it sums the gathered 1-D array of one node, so the
    choice is the same float for float."""
    possible = gain > -_EPSILON
    averaged = possible & in_average
    count = averaged.sum(axis=1)
    average = np.full(len(gain), 1e6)
    for c in np.unique(count[count > 0]):
        rows = np.flatnonzero(count == c)
        packed = gain[rows][averaged[rows]].reshape(-1, c)  # row-major: each row's own, in order
        average[rows] = packed.sum(axis=1) / c
    eligible = possible & (gain >= average[:, None] - _EPSILON) & (split_info > _EPSILON)
    worth = np.where(eligible, gain / np.where(eligible, split_info, 1.0), -_EPSILON)
    best = np.argmax(worth, axis=1)
    picked = np.arange(len(gain))
    chosen = np.where(worth[picked, best] <= -_EPSILON, -1, best)
    return chosen, thresholds[picked, best]


def in_average_mask(is_numeric: np.ndarray, domain_sizes: np.ndarray, n: int) -> np.ndarray:
    """Which attributes count towards the average gain: C4.5 leaves out categorical ones with
    distinct values for at least 30% of the rows, unless every attribute is many-valued."""
    many = np.zeros(len(is_numeric), dtype=bool)
    many[np.flatnonzero(~is_numeric)] = domain_sizes >= _MANY_VALUES_SHARE * n
    return ~many if not many.all() else np.ones_like(many)


def collapse_unhelpful(created: list[_Node]) -> None:
    """Turn into leaves the grown subtrees that do not reduce training errors; `created`
    lists every node after its parent, so its reverse is bottom-up."""
    errors: dict[int, float] = {}
    for node in reversed(created):
        leaf_errors = float(node.counts.sum() - node.counts[node.best])
        if node.attr >= 0:
            subtree = sum(errors.pop(id(c)) for c in node.children.values())
            if subtree >= leaf_errors - _EPSILON:
                node.make_leaf()
            else:
                leaf_errors = subtree
        errors[id(node)] = leaf_errors


def leaf_estimate_of(
    best: int, counts: np.ndarray, n: int, cf: float, z2: float
) -> tuple[int, float]:
    """(class predicted, pessimistic estimated errors) of a node turned leaf on rows with
    class `counts`: the stored class `best` stays unless another class has more rows."""
    if n and counts.max() > counts[best]:
        best = int(np.argmax(counts))
    leaf_errors = n - counts[best]
    return best, float(leaf_errors + added_errors(n, leaf_errors, cf, z2))


def prune_choice(leaf: float, branch: float, tree: float) -> str:
    """C4.5's EstimateErrors decision from the estimated errors of the node as a leaf, of its
    largest branch fed all its rows, and of its subtree: LEAF, RAISE or KEEP (simpler wins
    within the slack)."""
    if leaf <= branch + _PRUNE_SLACK and leaf <= tree + _PRUNE_SLACK:
        return LEAF
    if branch <= tree + _PRUNE_SLACK:
        return RAISE
    return KEEP


def added_errors(n: float, errors: float, cf: float, z2: float | None = None) -> float:
    """C4.5's pessimistic estimate of the extra errors at a leaf.

    A leaf that misclassifies `errors` of its `n` training rows is charged the upper `cf`
    confidence limit of the binomial error count, so small leaves pay for their optimism
    (Quinlan 1993, ch. 4). Returns that limit minus `errors`. With no error the exact binomial
    limit n * (1 - cf^(1/n)) is used, between 0 and 1 error a linear interpolation, and
    otherwise the normal approximation with continuity correction, as C4.5 does. `z2` is the
    squared normal deviate for `cf`, computed when not given.
    """
    if n <= 0:
        return 0.0
    no_error_bound = n * (1.0 - cf ** (1.0 / n))
    if errors < 1e-6:
        return no_error_bound
    if errors < 0.9999:
        return no_error_bound + errors * (added_errors(n, 1.0, cf, z2) - no_error_bound)
    if errors + 0.5 >= n:
        return 0.67 * (n - errors)
    if z2 is None:
        z2 = _squared_deviate(cf)
    e = errors + 0.5
    upper = (e + z2 / 2 + math.sqrt(z2 * (e * (1.0 - e / n) + z2 / 4))) / (n + z2)
    return n * upper - errors


def _squared_deviate(cf: float) -> float:
    """Square of the one-sided normal deviate for confidence `cf` (0.674^2 for 0.25)."""
    return NormalDist().inv_cdf(1.0 - cf) ** 2


def _groups(codes: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(code, positions holding it) for each distinct code, in increasing code order."""
    if len(codes) == 0:
        return []
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    bounds = [0, *(np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist(), len(codes)]
    return [(int(ordered[b]), order[b:e]) for b, e in itertools.pairwise(bounds)]


@contextlib.contextmanager
def _recursion_room(depth: int) -> Iterator[None]:
    """Let pruning recurse as deep as the tree: raise Python's recursion limit for the call."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, old + depth + 50))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _reject_missing(column: pd.Series, name: str) -> None:
    if column.isna().any():
        row = int(np.flatnonzero(column.isna().to_numpy())[0])
        raise FedanonError(f"C4.5: missing value in training column {name!r} (row {row})")


def _as_float(column: pd.Series, name: str) -> np.ndarray:
    """A numeric column as float64 (missing values as NaN); a value that is neither a number
    nor missing is a clear input error."""
    converted = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(converted) & ~column.isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise FedanonError(f"C4.5: numeric column {name!r} holds {column.iloc[row]!r} (row {row})")
    return converted


def _factorize(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes and the value list, sorted when the values are comparable so that the
    tree does not depend on row order."""
    try:
        codes, uniques = pd.factorize(values, sort=True)
    except TypeError:
        codes, uniques = pd.factorize(values, sort=False)
    return codes.astype(np.intp), pd.Index(uniques)


def _stack(columns: list[np.ndarray], n: int) -> np.ndarray:
    if not columns:
        return np.empty((n, 0), dtype=np.intp)
    return np.column_stack(columns).astype(np.intp)
