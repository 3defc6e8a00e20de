"""C4.5 grown from counts alone: the learner of federated C4.5 and federated kACTUS.

`fedanon.utility.c45` fits on records. Here the same tree is grown by a learner that never sees
a record: it asks a *count oracle* for count vectors and decides everything from them with the
very functions `c45` decides with (gain, cuts, choice, collapse, pruning), so the two trees are
equal node for node. An oracle answers a batch of :class:`Query` with one flat vector of
non-negative integers; a :class:`LocalOracle` counts one table (a party's, or a pooled one), and
a :class:`FederatedOracle` adds the parties' vectors with a secure sum, so the learner (the
leader) sees only totals. docs/federated_classification.md describes the protocol and what the
leader learns.

Growing is level by level: one HISTOGRAMS query per frontier node that may split, answering
the node's class counts, (value x class) for every categorical attribute and (distinct value x
class) over the agreed domain of every numeric one. The node's children's class counts are rows
of that histogram, so leaves cost nothing more. Pruning needs the class counts of records
routed through a subtree that is not theirs (C4.5's subtree raising re-feeds a node's largest
branch with all the node's records): every such set is a conjunction of tests (a :data:`Path`),
and the learner asks SPLIT queries (branch x class of one test at one path) for the whole
subtree in one batch before walking it. The first pruning pass reuses the growing counts.

The agreed domains (every categorical value, every distinct numeric value, every class, over all
parties) come from :func:`agree_schema`, which takes the union through a callable: in the
federation, the secure set union, so the leader learns the union but not who holds what.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError
from fedanon.utility.c45 import (
    C45,
    LEAF,
    RAISE,
    NumericCuts,
    _as_float,
    _Node,
    _recursion_room,
    _reject_missing,
    _squared_deviate,
    categorical_scores,
    choose_splits,
    collapse_unhelpful,
    grouped_numeric_scores,
    in_average_mask,
    leaf_estimate_of,
    numeric_cut_range,
    prune_choice,
    xlogx_table,
)

# One test outcome on a path: (feature, branch, threshold). A categorical branch is the value's
# position in the agreed domain (threshold None); a numeric branch is 0 for value <= threshold
# and 1 for value > threshold.
Condition = tuple[int, int, float | None]
Path = tuple[Condition, ...]

# Query kinds.
HISTOGRAMS = "histograms"  # class counts, then every feature's (value x class) counts
SPLIT = "split"  # (branch x class) counts of one feature's test
CLASSES = "classes"  # class counts


@dataclass(frozen=True)
class Query:
    """One count request about the records matching `path`."""

    path: Path
    kind: str
    feature: int = -1  # SPLIT only
    threshold: float | None = None  # SPLIT on a numeric feature only
    # HISTOGRAMS with narrowing: per numeric feature, the positions in its agreed values to
    # count (those present at the parent node); None: the whole agreed domain.
    support: tuple[np.ndarray, ...] | None = field(default=None, compare=False)


class CountOracle(Protocol):
    """Answers a batch of queries with the concatenation of their count vectors, in query
    order; each vector's length is :meth:`Schema.size` of its query."""

    def count(self, queries: Sequence[Query]) -> np.ndarray: ...


@dataclass
class Schema:
    """The agreed encoding: features, which are numeric, every domain, the classes.

    Categorical domains and numeric values are sorted, as `c45` sorts the pooled table's, so
    branch numbers and thresholds are the same as a pooled fit's.
    """

    features: list[str]
    is_numeric: np.ndarray
    domains: list[pd.Index]  # categorical features, in feature order
    values: list[np.ndarray]  # numeric features' sorted distinct values, in feature order
    classes: pd.Index
    column: np.ndarray = field(init=False)  # feature -> position among its kind

    def __post_init__(self) -> None:
        before = np.cumsum(self.is_numeric) - self.is_numeric
        self.column = np.where(
            self.is_numeric, before, np.arange(len(self.features)) - before
        ).astype(np.intp)
        k = len(self.classes)
        self.cat_sizes = np.array([len(d) for d in self.domains], dtype=np.intp)
        self.cat_starts = np.cumsum(self.cat_sizes) - self.cat_sizes
        self.num_sizes = np.array([len(v) for v in self.values], dtype=np.intp)
        self.num_starts = np.cumsum(self.num_sizes) - self.num_sizes
        self.cat_bins = int(self.cat_sizes.sum()) * k
        self.histogram_size = k + self.cat_bins + int(self.num_sizes.sum()) * k

    def branches(self, feature: int) -> int:
        """Number of branches of a test on `feature` (empty ones included)."""
        return 2 if self.is_numeric[feature] else int(self.cat_sizes[self.column[feature]])

    def size(self, query: Query) -> int:
        k = len(self.classes)
        if query.kind == HISTOGRAMS:
            if query.support is None:
                return self.histogram_size
            return k + self.cat_bins + sum(len(s) for s in query.support) * k
        if query.kind == SPLIT:
            return self.branches(query.feature) * k
        return k


# ---------------------------------------------------------------------------- agreed domains


@dataclass
class LocalDomains:
    """What one party puts into the union: its distinct values per feature and its classes."""

    values: list[set[object]]
    classes: set[object]


def local_domains(X: pd.DataFrame, y: pd.Series, schema_features: FeatureKinds) -> LocalDomains:
    """A party's distinct values (numeric features as floats), checked as `c45` checks."""
    _require_features(X, schema_features)
    values: list[set[object]] = []
    for name in schema_features.features:
        _reject_missing(X[name], name)
        if name in schema_features.numeric:
            values.append(set(np.unique(_as_float(X[name], name)).tolist()))
        else:
            values.append(set(pd.unique(X[name]).tolist()))
    _reject_missing(y, "class")
    return LocalDomains(values, set(pd.unique(y).tolist()))


@dataclass(frozen=True)
class FeatureKinds:
    """The learning task every party agrees on before counting: features and numeric ones."""

    features: list[str]
    numeric: frozenset[str]


Union = Callable[[Sequence[Sequence[bytes]]], list[bytes]]


def plain_union(sets: Sequence[Sequence[bytes]]) -> list[bytes]:
    """The union without protection (pooled runs and tests); the federation passes the
    secure set union instead."""
    return sorted({value for values in sets for value in values})


def agree_schema(
    kinds: FeatureKinds, parties: Sequence[LocalDomains], union: Union = plain_union
) -> Schema:
    """The schema over the union of every party's values, taken by `union` on an encoding of
    (feature, value) as bytes: with a secure set union the leader learns each feature's
    union of values, not which party holds a value or how many records do."""
    encoded = [
        [
            *(_encode(j, v) for j, values in enumerate(p.values) for v in values),
            *(_encode(-1, c) for c in p.classes),
        ]
        for p in parties
    ]
    decoded: dict[int, list[object]] = {}
    for item in union(encoded):
        feature, value = _decode(item)
        decoded.setdefault(feature, []).append(value)
    if not decoded.get(-1):
        raise FedanonError("C4.5: no training rows at any party")
    is_numeric = np.array([f in kinds.numeric for f in kinds.features], dtype=bool)
    domains = [
        _sorted_index(decoded.get(j, []), name)
        for j, name in enumerate(kinds.features)
        if not is_numeric[j]
    ]
    values = [
        np.unique(np.array(decoded.get(j, []), dtype=np.float64))
        for j in range(len(kinds.features))
        if is_numeric[j]
    ]
    return Schema(
        list(kinds.features), is_numeric, domains, values, _sorted_index(decoded[-1], "class")
    )


def _sorted_index(values: list[object], name: str) -> pd.Index:
    """The values in `c45`'s order (pandas' sorted factorization); values that cannot be
    ordered have only a pooled table's order of appearance, which a union does not keep."""
    try:
        return pd.Index(pd.factorize(pd.Series(values, dtype=object), sort=True)[1])
    except TypeError as err:
        raise FedanonError(
            f"federated C4.5: the values of {name!r} cannot be sorted (mixed types)"
        ) from err


def _encode(feature: int, value: object) -> bytes:
    """(feature, value) as bytes with the value's type, so that the union keeps 1 and '1'
    apart and decodes to the same Python value."""
    head = struct.pack(">i", feature)
    if isinstance(value, bool | np.bool_):
        return head + b"b" + (b"1" if value else b"0")
    if isinstance(value, int | np.integer):
        return head + b"i" + str(int(value)).encode()
    if isinstance(value, float | np.floating):
        return head + b"f" + struct.pack(">d", float(value))
    if isinstance(value, str):
        return head + b"s" + value.encode("utf-8")
    raise FedanonError(f"federated C4.5: cannot agree on a value of type {type(value).__name__}")


def _decode(item: bytes) -> tuple[int, object]:
    feature = struct.unpack(">i", item[:4])[0]
    tag, body = item[4:5], item[5:]
    value: object
    if tag == b"b":
        value = body == b"1"
    elif tag == b"i":
        value = int(body)
    elif tag == b"f":
        value = struct.unpack(">d", body)[0]
    else:
        value = body.decode("utf-8")
    return feature, value


def _require_features(X: pd.DataFrame, kinds: FeatureKinds) -> None:
    missing = [f for f in kinds.features if f not in X.columns]
    if missing:
        raise FedanonError(f"C4.5: feature columns missing: {missing}")


# ---------------------------------------------------------------------------- oracles


class LocalOracle:
    """Counts one table: a party's own, or the pooled table of a centralized run.

    Rows matching a path are found from the rows of the path without its last test (memoized),
    so a level of the tree costs one pass over the records.
    """

    def __init__(self, X: pd.DataFrame, y: pd.Series, schema: Schema) -> None:
        kinds = FeatureKinds(
            schema.features, frozenset(np.array(schema.features)[schema.is_numeric])
        )
        _require_features(X, kinds)
        self._schema = schema
        k = len(schema.classes)
        self._y = _codes(schema.classes, y, "class")
        n = len(self._y)
        self._codes = np.zeros((n, len(schema.features)), dtype=np.intp)
        self._raw = np.zeros((n, len(schema.features)))
        keys = np.zeros((n, len(schema.features)), dtype=np.intp)
        self._ranks = np.zeros((n, len(schema.values)), dtype=np.intp)
        for j, name in enumerate(schema.features):
            col = schema.column[j]
            _reject_missing(X[name], name)
            if schema.is_numeric[j]:
                raw = _as_float(X[name], name)
                rank = np.searchsorted(schema.values[col], raw)
                if n and (
                    rank.max() >= len(schema.values[col]) or (schema.values[col][rank] != raw).any()
                ):
                    raise FedanonError(f"C4.5: values of {name!r} outside the agreed domain")
                self._raw[:, j] = raw
                self._ranks[:, col] = rank
                keys[:, j] = schema.cat_bins + (schema.num_starts[col] + rank) * k
            else:
                codes = _codes(schema.domains[col], X[name], name)
                self._codes[:, j] = codes
                keys[:, j] = (schema.cat_starts[col] + codes) * k
        self._keys = keys + self._y[:, None]
        self._memo: dict[Path, np.ndarray] = {(): np.arange(n)}

    def count(self, queries: Sequence[Query]) -> np.ndarray:
        return np.concatenate([self._answer(q) for q in queries]) if queries else _EMPTY

    def _answer(self, query: Query) -> np.ndarray:
        rows = self._rows(query.path)
        k = len(self._schema.classes)
        classes = np.bincount(self._y[rows], minlength=k)
        if query.kind == CLASSES:
            return classes
        if query.kind == HISTOGRAMS and query.support is None:
            size = self._schema.histogram_size - k
            tables = np.bincount(self._keys[rows].ravel(), minlength=size)
            return np.concatenate([classes, tables])
        if query.kind == HISTOGRAMS and query.support is not None:
            return self._narrow_histograms(rows, classes, query.support)
        branch = self._branch(rows, query.feature, query.threshold)
        size = self._schema.size(query)
        return np.bincount(branch * k + self._y[rows], minlength=size)

    def _narrow_histograms(
        self, rows: np.ndarray, classes: np.ndarray, support: Sequence[np.ndarray]
    ) -> np.ndarray:
        """HISTOGRAMS with each numeric feature counted over `support` only (every value
        at the node is in it: the node's rows are among its parent's)."""
        schema = self._schema
        k = len(schema.classes)
        y = self._y[rows]
        cat = np.flatnonzero(~schema.is_numeric)
        parts = [classes, np.bincount(self._keys[rows][:, cat].ravel(), minlength=schema.cat_bins)]
        for col, positions in enumerate(support):
            slot = np.searchsorted(positions, self._ranks[rows, col])
            parts.append(np.bincount(slot * k + y, minlength=len(positions) * k))
        return np.concatenate(parts)

    def _branch(self, rows: np.ndarray, feature: int, threshold: float | None) -> np.ndarray:
        if self._schema.is_numeric[feature]:
            return (self._raw[rows, feature] > threshold).astype(np.intp)
        return self._codes[rows, feature]

    def _rows(self, path: Path) -> np.ndarray:
        rows = self._memo.get(path)
        if rows is None:
            parent = self._rows(path[:-1])
            feature, branch, threshold = path[-1]
            rows = parent[self._branch(parent, feature, threshold) == branch]
            self._memo[path] = rows
        return rows


_EMPTY = np.zeros(0, dtype=np.int64)

Adder = Callable[[Sequence[np.ndarray]], np.ndarray]


def plain_sum(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """Adds the parties' vectors in the clear (pooled runs and tests)."""
    return np.sum(np.stack(vectors), axis=0)


class FederatedOracle:
    """The parties' count vectors added by `add`: in the federation a secure sum (ring or
    pairwise masks), so the learner sees the totals only."""

    def __init__(self, parties: Sequence[CountOracle], add: Adder = plain_sum) -> None:
        if not parties:
            raise FedanonError("federated C4.5 needs at least one party")
        self._parties = list(parties)
        self._add = add
        self.rounds = 0  # secure-sum rounds run so far
        self.counts_summed = 0  # length of the vectors summed so far

    def count(self, queries: Sequence[Query]) -> np.ndarray:
        if not queries:
            return _EMPTY
        self.rounds += 1
        vectors = [np.asarray(p.count(queries), dtype=np.int64) for p in self._parties]
        self.counts_summed += len(vectors[0])
        return np.asarray(self._add(vectors), dtype=np.int64)


def _codes(domain: pd.Index, column: pd.Series, name: str) -> np.ndarray:
    codes = domain.get_indexer(pd.Index(pd.Series(column).to_numpy(dtype=object)))
    if (codes < 0).any():
        raise FedanonError(f"C4.5: values of {name!r} outside the agreed domain")
    return codes.astype(np.intp)


# ---------------------------------------------------------------------------- the learner


def fit_from_counts(
    oracle: CountOracle,
    schema: Schema,
    *,
    min_leaf: int = 2,
    cf: float = 0.25,
    prune: bool = True,
    subtree_raising: bool = True,
    narrow: bool = False,
) -> C45:
    """A fitted :class:`C45` grown and pruned from `oracle`'s counts: the tree `C45(...).fit`
    grows on the records the oracle counts, node for node.

    `narrow` asks a node's numeric histograms over the values present at its parent instead of
    the whole agreed domain: far fewer counts on many-valued attributes (Adult's fnlwgt), the
    same tree, but the parties then learn which values occur at each parent node
    (docs/federated_classification.md)."""
    model = C45(min_leaf=min_leaf, cf=cf, prune=prune, subtree_raising=subtree_raising)
    learner = _Learner(oracle, schema, model)
    root, depth = learner.grow(narrow)
    if prune:
        # Pruning's tasks nest three frames a level (a task, its children's, their advance).
        with _recursion_room(3 * depth):
            learner.prune(root)
    return model._install(
        schema.features, schema.is_numeric, schema.domains, schema.values, schema.classes, root
    )


def fit_pooled(X: pd.DataFrame, y: pd.Series, numeric: Iterable[str], **options: object) -> C45:
    """Count-driven fit of one table (its own schema): the centralized baseline of the bench."""
    kinds = FeatureKinds([str(c) for c in X.columns], frozenset(numeric))
    schema = agree_schema(kinds, [local_domains(X, y, kinds)])
    return fit_from_counts(LocalOracle(X, y, schema), schema, **options)  # type: ignore[arg-type]


#: A pruning task (`_Learner._decide`): yields the queries it needs next, returns its estimate.
_Task = Generator[list[Query], None, float]


def _asking(queries: list[Query]) -> Generator[list[Query], None, float]:
    """A task that only asks `queries` (once, if any)."""
    if queries:
        yield queries
    return math.nan


Support = tuple[np.ndarray, ...] | None
# A split node whose children may all split: its counts laid out as theirs, its children.
_Family = tuple[np.ndarray, list[tuple[_Node, Path, Support]]]


@dataclass
class _Histograms:
    """A node's HISTOGRAMS answer, unpacked: numeric features as (positions in the agreed
    values, (position x class) counts)."""

    classes: np.ndarray
    categorical: np.ndarray
    numeric: list[tuple[np.ndarray, np.ndarray]]


class _Learner:
    """The leader's side: decides the tree from count vectors."""

    def __init__(self, oracle: CountOracle, schema: Schema, model: C45) -> None:
        self._oracle = oracle
        self._schema = schema
        self._k = len(schema.classes)
        self._min_leaf = model.min_leaf
        self._cf = model.cf
        self._raising = model.subtree_raising
        self._z2 = _squared_deviate(model.cf)
        self._classes: dict[Path, np.ndarray] = {}
        self._splits: dict[tuple[Path, int, float | None], np.ndarray] = {}

    def _ask(self, queries: list[Query]) -> list[np.ndarray]:
        flat = self._oracle.count(queries)
        sizes = [self._schema.size(q) for q in queries]
        if len(flat) != sum(sizes):
            raise FedanonError(f"count oracle answered {len(flat)} counts, not {sum(sizes)}")
        if (flat < 0).any():
            raise FedanonError("count oracle answered a negative count")
        return np.split(flat, np.cumsum(sizes)[:-1]) if queries else []

    # ------------------------------------------------------------------ growing

    def grow(self, narrow: bool) -> tuple[_Node, int]:
        """Grow level by level, then collapse unhelpful subtrees; (root, depth)."""
        (root_histogram,) = self._ask([Query((), HISTOGRAMS)])
        k = self._k
        counts = root_histogram[:k]
        n = int(counts.sum())
        if n == 0:
            raise FedanonError("C4.5: no training rows")
        self._xlogx = xlogx_table(n)
        self._in_average = in_average_mask(self._schema.is_numeric, self._schema.cat_sizes, n)
        self._narrow = narrow
        root = _new_node(counts)
        created: list[_Node] = []
        level: list[tuple[_Node, Path, Support]] = [(root, (), None)]
        families: list[_Family] = []
        depth = 0
        while level:
            created.extend(node for node, _, _ in level)
            open_ = [entry for entry in level if self._may_split(entry[0])]
            if level[0][0] is root:
                histograms = [root_histogram] if open_ else []
            else:
                histograms = self._level_histograms(open_, families)
            level, families = self._split_level(open_, histograms)
            depth += bool(level)
        collapse_unhelpful(created)
        return root, depth

    def _level_histograms(
        self, open_: list[tuple[_Node, Path, Support]], families: list[_Family]
    ) -> list[np.ndarray]:
        """The HISTOGRAMS answers of a level's open nodes, in order, in one round; the last
        child of each family is not asked but computed: its parent's counts minus its
        siblings' (every record of the parent is in exactly one child), the very counts its
        query would answer."""
        derived = {id(children[-1][0]): (counts, children) for counts, children in families}
        asked = [(node, p, s) for node, p, s in open_ if id(node) not in derived]
        answers = dict(
            zip(
                (id(node) for node, _, _ in asked),
                self._ask([Query(p, HISTOGRAMS, support=s) for _, p, s in asked]),
                strict=True,
            )
        )
        for last, (counts, children) in derived.items():
            answer = counts - np.sum([answers[id(c)] for c, _, _ in children[:-1]], axis=0)
            if (answer < 0).any():
                raise FedanonError("count oracle answered a child more records than its parent")
            answers[last] = answer
        return [answers[id(node)] for node, _, _ in open_]

    def _may_split(self, node: _Node) -> bool:
        n = node.counts.sum()
        return not (node.counts[node.best] == n or n < 2 * self._min_leaf)

    def _unpack(self, histogram: np.ndarray, support: Support) -> _Histograms:
        """A HISTOGRAMS answer as (class counts, categorical tables, numeric parts)."""
        schema, k = self._schema, self._k
        tables = histogram[k:]
        numeric = []
        start = schema.cat_bins
        for col, size in enumerate(schema.num_sizes):
            positions = np.arange(size) if support is None else support[col]
            end = start + len(positions) * k
            numeric.append((positions, tables[start:end].reshape(-1, k)))
            start = end
        return _Histograms(histogram[:k], tables[: schema.cat_bins], numeric)

    def _split_level(
        self, open_: list[tuple[_Node, Path, Support]], histograms: list[np.ndarray]
    ) -> tuple[list[tuple[_Node, Path, Support]], list[_Family]]:
        """Split every open node of a level; the level's next frontier, and the families
        in it whose last child's histograms the next round need not ask (every child of the
        split node may split: its counts in its children's layout, the children).

        The split search scores all the level's nodes at once (numpy over their stacked
        counts, `c45`'s very arithmetic per node, so the same floats), then chooses per node
        with `c45`'s `choose_split`."""
        if not open_ or not self._schema.features:  # no feature: no test
            return [], []
        chosen, thresholds = choose_splits(*self._level_scores(open_, histograms), self._in_average)
        level, families = [], []
        for i in np.flatnonzero(chosen >= 0).tolist():
            node, path, support = open_[i]
            split = (int(chosen[i]), float(thresholds[i]))
            children = self._split_node(node, path, self._unpack(histograms[i], support), split)
            level.extend(children)
            if len(children) > 1 and all(self._may_split(c) for c, _, _ in children):
                families.append((self._in_child_layout(histograms[i], support), children))
        return level, families

    def _in_child_layout(self, histogram: np.ndarray, support: Support) -> np.ndarray:
        """A node's HISTOGRAMS answer laid out as its children's (with narrowing, each
        numeric feature restricted to the values present at the node, their support)."""
        if not self._narrow:
            return histogram
        unpacked = self._unpack(histogram, support)
        numeric = [t[t.sum(axis=1) > 0].ravel() for _, t in unpacked.numeric]
        return np.concatenate([unpacked.classes, unpacked.categorical, *numeric])

    def _split_node(
        self, node: _Node, path: Path, histograms: _Histograms, split: tuple[int, float]
    ) -> list[tuple[_Node, Path, Support]]:
        feature, threshold = split
        node.attr = feature
        node.threshold = threshold
        node.n_branches = self._schema.branches(feature)
        key = None if not self._schema.is_numeric[feature] else threshold
        table = self._branch_table(histograms, feature, threshold)
        branches = self._remember(path, feature, key, table)
        # With narrowing, a child counts each numeric feature over the values present here.
        support = (
            tuple(positions[t.sum(axis=1) > 0] for positions, t in histograms.numeric)
            if self._narrow
            else None
        )
        as_float = table.astype(np.float64)
        best = as_float.argmax(axis=1).tolist()  # the first largest class, as `_new_node`
        children = []
        for branch in branches:
            child = _Node(as_float[branch], best[branch])
            node.children[branch] = child
            children.append((child, (*path, (feature, branch, key)), support))
        return children

    def _level_scores(
        self, open_: list[tuple[_Node, Path, Support]], histograms: list[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(gain, split information, threshold), each (node x feature), of a level's nodes."""
        schema, k, xlogx = self._schema, self._k, self._xlogx
        nodes, n_feat = len(open_), len(schema.features)
        gain = np.full((nodes, n_feat), -1e-3)
        split_info = np.zeros((nodes, n_feat))
        thresholds = np.full((nodes, n_feat), math.nan)
        classes = np.stack([h[:k] for h in histograms]).astype(np.intp)
        n = classes.sum(axis=1)
        base = (xlogx[n] - xlogx[classes].sum(axis=1)) / n  # `base_information` per node
        cat = np.flatnonzero(~schema.is_numeric)
        num = np.flatnonzero(schema.is_numeric)
        if len(cat):
            table = np.stack([h[k : k + schema.cat_bins] for h in histograms]).astype(np.intp)
            starts = (
                np.arange(nodes)[:, None] * int(schema.cat_sizes.sum()) + schema.cat_starts
            ).ravel()
            g, s = categorical_scores(
                table.reshape(-1, k),
                starts,
                np.repeat(n, len(cat)),
                np.repeat(base, len(cat)),
                self._min_leaf,
                xlogx,
            )
            gain[:, cat] = g.reshape(nodes, -1)
            split_info[:, cat] = s.reshape(nodes, -1)
        if len(num):
            m = len(num)
            cuts = self._level_cuts(open_, histograms, n)
            g, s, t = grouped_numeric_scores(
                cuts,
                np.repeat(n, m),
                np.repeat(classes, m, axis=0),
                np.repeat(base, m),
                np.tile(np.arange(m), nodes),
                schema.values,
                xlogx,
            )
            gain[:, num] = g.reshape(nodes, m)
            split_info[:, num] = s.reshape(nodes, m)
            thresholds[:, num] = t.reshape(nodes, m)
        return gain, split_info, thresholds

    def _level_cuts(
        self, open_: list[tuple[_Node, Path, Support]], histograms: list[np.ndarray], n: np.ndarray
    ) -> NumericCuts:
        """Every admissible cut of every numeric attribute at every node of a level, from
        their (value x class) counts stacked, grouped by (node, attribute): a cut follows each
        value present at the node whose cumulative count leaves enough rows on both sides."""
        schema, k = self._schema, self._k
        m = len(schema.values)
        head = k + schema.cat_bins
        sizes = np.array(
            [
                size
                for _, _, support in open_
                for size in (schema.num_sizes if support is None else [len(p) for p in support])
            ],
            dtype=np.intp,
        )
        ends = np.cumsum(sizes)
        # One running count over the whole stack of the level's (value x class) counts: the
        # values present at each node, their running class counts within their (node,
        # attribute) group. Only the present values are gathered (their index in the stack,
        # their group by its end, their position within it): over full agreed domains the
        # stack holds tens of millions of cells, mostly empty, read once each here.
        found: list[np.ndarray] = []
        cells: list[np.ndarray] = []
        start = 0
        for histogram in histograms:
            table = histogram[head:].reshape(-1, k)
            rows = table[:, 0].copy()
            for j in range(1, k):  # a pass per class: numpy's reduce over a short axis is slow
                rows += table[:, j]
            at = np.flatnonzero(rows)
            found.append(at + start)
            cells.append(table[at])
            start += len(table)
        here = np.concatenate(found)
        group = np.searchsorted(ends, here, side="right")
        if all(support is None for _, _, support in open_):
            present = here - (ends - sizes)[group]  # the value's index in the agreed domain
        else:
            every = tuple(np.arange(size) for size in schema.num_sizes)
            parts = [every if support is None else support for _, _, support in open_]
            present = np.concatenate([p for part in parts for p in part])[here]
        running = np.cumsum(np.concatenate(cells), axis=0)
        before = np.vstack([np.zeros((1, k), running.dtype), running])
        left = running - before[np.searchsorted(group, group)]
        left_n = left.sum(axis=1)
        ranges = np.array(
            [numeric_cut_range(int(rows), k, self._min_leaf) for rows in n], dtype=np.intp
        ).reshape(-1, 2)
        node = group // m
        # A group's last value holds all its node's rows (> the most a cut may leave), so
        # the next value present is always the same group's.
        cut = np.flatnonzero((left_n >= ranges[node, 0]) & (left_n <= ranges[node, 1]))
        return NumericCuts(
            group[cut].astype(np.intp),
            left_n[cut].astype(np.intp),
            left[cut].astype(np.intp),
            present[cut].astype(np.intp),
            present[cut + 1].astype(np.intp),
        )

    def _branch_table(self, histograms: _Histograms, feature: int, threshold: float) -> np.ndarray:
        """(branch x class) counts of a test, read off the node's histograms."""
        schema, k = self._schema, self._k
        col = schema.column[feature]
        if not schema.is_numeric[feature]:
            start = schema.cat_starts[col] * k
            flat = histograms.categorical[start : start + schema.cat_sizes[col] * k]
            return flat.reshape(-1, k)
        positions, values = histograms.numeric[col]
        cut = int(np.searchsorted(schema.values[col][positions], threshold, side="right"))
        return np.stack([values[:cut].sum(axis=0), values[cut:].sum(axis=0)])

    def _remember(
        self, path: Path, feature: int, key: float | None, table: np.ndarray
    ) -> list[int]:
        """Cache a test's branch counts, and so the class counts at the path and below; the
        branches that hold rows."""
        self._splits[path, feature, key] = table
        self._classes[path] = table.sum(axis=0)
        branches: list[int] = np.flatnonzero(table.sum(axis=1)).tolist()
        for branch in branches:
            self._classes[(*path, (feature, branch, key))] = table[branch]
        return branches

    # ------------------------------------------------------------------ pruning

    def prune(self, root: _Node) -> None:
        """`C45._estimate(root, all rows, update=True)`, its queries batched across the tree:
        each round asks what every subtree whose pruning is waiting on counts needs next."""
        self._decided: dict[tuple[int, Path], float] = {}
        task = self._decide(root, ())
        try:
            while True:
                self._fetch(task.send(None))
        except StopIteration:
            pass

    def _decide(self, node: _Node, at: Path) -> _Task:
        """`C45._estimate(node, records matching at, update=True)` as a task that yields the
        queries it needs next and returns the estimate once `node` is decided.

        The recursion decides a node once its subtree is decided, and the decisions of
        disjoint subtrees do not interact, so the children's tasks run side by side
        (:meth:`_together`): a round carries every waiting subtree's next queries, so the
        rounds follow the longest chain of dependent decisions, not the sum over heights.
        The node's own test counts ride in its children's first round; the counts judging
        the raising of its largest branch follow once the children are decided; a raised
        branch is re-decided on `at`'s records before `node` becomes it. The queries are
        those the recursive `_estimate` asks, in fewer rounds."""
        if node.attr < 0 or (id(node), at) in self._decided:
            return self._estimate(node, at, update=True)
        key = self._key(node)
        own = [] if (at, node.attr, key) in self._splits else [Query(at, SPLIT, node.attr, key)]
        children = [self._decide(c, (*at, (node.attr, b, key))) for b, c in node.children.items()]
        yield from self._together([_asking(own), *children])
        if self._raising:
            yield self._missing_for_raising(node, at)
        estimate, largest = self._judge(node, at, update=True)
        if largest is not None:
            estimate = yield from self._decide(largest, at)
            node.become(largest)
        self._decided[id(node), at] = estimate
        return estimate

    @staticmethod
    def _together(tasks: list[_Task]) -> Generator[list[Query], None, list[float]]:
        """Run `tasks` side by side: each round, the queries every unfinished one asks next
        (a task asking none is advanced at once); their results, in order."""
        results: list[float] = [math.nan] * len(tasks)

        def advance(i: int) -> list[Query] | None:
            try:
                while not (queries := tasks[i].send(None)):
                    pass
                return queries
            except StopIteration as done:
                results[i] = done.value
                return None

        waiting = {i: q for i in range(len(tasks)) if (q := advance(i)) is not None}
        while waiting:
            merged = {
                (q.path, q.kind, q.feature, q.threshold): q for qs in waiting.values() for q in qs
            }
            yield list(merged.values())
            waiting = {i: q for i in waiting if (q := advance(i)) is not None}
        return results

    def _key(self, node: _Node) -> float | None:
        return node.threshold if self._schema.is_numeric[node.attr] else None

    def _missing_for_raising(self, node: _Node, path: Path) -> list[Query]:
        """The queries judging the raising of `node`'s largest branch will need."""
        table = self._split_counts(path, node)
        sizes = table.sum(axis=1)
        branches = np.flatnonzero(sizes)
        # The largest branch, the last one of the largest size (as `_estimate` picks it).
        largest = node.children.get(
            int(branches[np.flatnonzero(sizes[branches] == sizes.max())[-1]])
        )
        if largest is None or largest.attr < 0:
            return []
        return self._missing(largest, path)

    def _prefetch(self, top: _Node, path: Path) -> None:
        """Ask, in one batch, for the counts `_estimate` needs to walk the subtree at `top`
        with the records matching `path`."""
        self._fetch(self._missing(top, path))

    def _missing(self, top: _Node, path: Path) -> list[Query]:
        """The queries not answered yet among those walking the subtree at `top` on `path`
        needs: each test's branch counts at its path (which give every node's class counts),
        and the class counts at `path` for a leaf."""
        queries: list[Query] = []
        stack = [(top, path)]
        while stack:
            node, at = stack.pop()
            if node.attr < 0:
                if node is top and at not in self._classes:
                    queries.append(Query(at, CLASSES))
                continue
            key = self._key(node)
            if (at, node.attr, key) not in self._splits:
                queries.append(Query(at, SPLIT, node.attr, key))
            stack.extend((c, (*at, (node.attr, b, key))) for b, c in node.children.items())
        return queries

    def _fetch(self, queries: list[Query]) -> None:
        for query, answer in zip(queries, self._ask(queries), strict=True):
            if query.kind == CLASSES:
                self._classes[query.path] = answer
            else:
                table = answer.reshape(-1, self._k)
                self._remember(query.path, query.feature, query.threshold, table)

    def _class_counts(self, path: Path) -> np.ndarray:
        if path not in self._classes:
            (self._classes[path],) = self._ask([Query(path, CLASSES)])
        return self._classes[path].astype(np.float64)

    def _split_counts(self, path: Path, node: _Node) -> np.ndarray:
        key = self._key(node)
        if (path, node.attr, key) not in self._splits:
            (answer,) = self._ask([Query(path, SPLIT, node.attr, key)])
            self._remember(path, node.attr, key, answer.reshape(-1, self._k))
        return self._splits[path, node.attr, key]

    def _estimate(self, node: _Node, path: Path, update: bool) -> float:
        """`C45._estimate` on the records matching `path`, from their counts (a node that
        `prune` decided on this path already returns its estimate)."""
        if update and (id(node), path) in self._decided:
            return self._decided[id(node), path]
        estimate, largest = self._judge(node, path, update)
        # Raising wins only where `_decide` judges an undecided internal node, never here.
        assert largest is None
        return estimate

    def _judge(self, node: _Node, path: Path, update: bool) -> tuple[float, _Node | None]:
        """`C45._estimate` of `node` on `path` whose subtree is decided: (its estimate,
        None), or (nan, its largest branch) when raising that branch wins, which the caller
        re-prunes on `path` before `node` becomes it."""
        counts = self._class_counts(path)
        n = int(counts.sum())
        best, leaf_estimate = leaf_estimate_of(node.best, counts, n, self._cf, self._z2)
        if update:
            node.counts = counts
            node.best = best
        if node.attr < 0:
            return leaf_estimate, None

        table = self._split_counts(path, node)
        sizes = table.sum(axis=1)
        key = self._key(node)
        tree_estimate = 0.0
        largest: _Node | None = None
        largest_n = -1
        for branch in np.flatnonzero(sizes):
            b = int(branch)
            child = node.children.get(b)
            if child is None:
                # An empty branch that receives rows after subtree raising: C4.5's empty
                # leaf, predicting this node's class.
                child = _Node(np.zeros(self._k), node.best)
                if update:
                    node.children[b] = child
            if sizes[b] >= largest_n:
                largest, largest_n = child, int(sizes[b])
            tree_estimate += self._estimate(child, (*path, (node.attr, b, key)), update)
        if not update:
            return tree_estimate, None

        assert largest is not None  # an internal node always has rows in some branch
        if not self._raising:
            branch_estimate = math.inf
        elif largest.attr < 0:
            branch_estimate = leaf_estimate  # as in C45._estimate: raising a leaf never wins
        else:
            self._prefetch(largest, path)
            branch_estimate = self._estimate(largest, path, update=False)
        choice = prune_choice(leaf_estimate, branch_estimate, tree_estimate)
        if choice == LEAF:
            node.make_leaf()
            return leaf_estimate, None
        if choice == RAISE:
            return math.nan, largest
        return tree_estimate, None


def _new_node(counts: np.ndarray) -> _Node:
    as_float = np.asarray(counts, dtype=np.float64)
    return _Node(as_float, int(np.argmax(as_float)))
