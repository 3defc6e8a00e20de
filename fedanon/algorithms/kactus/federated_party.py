"""Federated kACTUS at one party: answers the leader's steps from its own table.

The party half of `fedanon.algorithms.kactus.federated`. Every step the leader sends is a
:class:`Step` (a name and flat arguments, so the wire form is one small message); the party
answers with an integer vector that only ever leaves it through the secure sum, or with nothing.
Its records leave only in two places: the union items of its QID texts and C4.5 domains (the
secure set union: the leader learns the union, not who holds what) and its released rows (the
secure set union of the integrated release). The step order and what each reveals are in
docs/federated_classification.md; the daemon's session (party/handlers/kactus_session.py) checks
the order, this class checks each step's arguments against the party's state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fedanon.algorithms.kactus.api import released_cells
from fedanon.algorithms.kactus.phase2 import Group
from fedanon.algorithms.kactus.tree import Node, place_records
from fedanon.algorithms.tabular import (
    QidColumn,
    encode_qid,
    require_labels,
    validate_columns,
)
from fedanon.errors import FedanonError
from fedanon.packed_counts import pack_fields
from fedanon.utility.c45 import TreeNode
from fedanon.utility.c45_counts import (
    FeatureKinds,
    LocalOracle,
    Query,
    _encode,
    agree_schema,
    local_domains,
)

# Random tags for choosing donated records live in [0, 2**TAG_BITS).
TAG_BITS = 62

# Step names, in protocol order ("tag" to "give" repeat per height; "tag" and "below" repeat
# on a tie; "median" repeats per bisection round).
ENCODE = "encode"  # items: the QID union -> [records]
COUNT = "count"  # queries (+ the C4.5 domains' union items, first time) -> counts
PLACE = "place"  # ints/floats: the tree -> every node's size, then the root residual
TAG = "tag"  # ints: nodes whose records get fresh random tags
BELOW = "below"  # ints: P probes per tagged node, node by node -> tags below each
GIVE = "give"  # ints: pruned parents, their complying children's cut-offs, failing children
GROUPS = "groups"  # ints: released groups' nodes (-1: the root's rest)
MEDIAN = "median"  # ints: (group, QID) pairs; floats: thresholds -> values at most them
MEAN = "mean"  # ints: (group, QID) pairs -> fixed-point sums
VALUES = "values"  # ints: (group, QID) pairs; floats: their values -> (the release is ready)
STEPS = (ENCODE, COUNT, PLACE, TAG, BELOW, GIVE, GROUPS, MEDIAN, MEAN, VALUES)
#: Steps answered with a vector for the secure sum.
SUMMED = frozenset({ENCODE, COUNT, PLACE, BELOW, MEDIAN, MEAN})


@dataclass
class Step:
    """One leader request: a step name and its flat arguments."""

    name: str
    ints: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    floats: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    items: list[bytes] = field(default_factory=list)
    queries: list[Query] = field(default_factory=list)
    # COUNT only, > 0: pack the counts in fields of this many bits (fedanon/packed_counts.py
    # pack_fields), several per word of the sum; the leader sets it from the record count.
    count_bits: int = 0


def qid_item(j: int, text: str) -> bytes:
    """One (QID position, present cell text) item of the QID union."""
    return j.to_bytes(4, "big") + text.encode("utf-8")


def agreed_qids(items: list[bytes], names: list[str]) -> list[QidColumn]:
    """The agreed encoding of every QID from the QID union's items, as `encode_qid` decides on
    the pooled table (kind, decimals, sorted categories); the leader and parties agree on it."""
    agreed: list[list[str]] = [[] for _ in names]
    for item in items:
        j = int.from_bytes(item[:4], "big")
        if not 0 <= j < len(names):
            raise FedanonError(f"the QID union names QID {j} of {len(names)}")
        agreed[j].append(item[4:].decode("utf-8"))
    out = []
    for j, name in enumerate(names):
        if not agreed[j]:
            raise FedanonError(f"QID column '{name}' holds only missing values")
        out.append(encode_qid(pd.Series(agreed[j], dtype=object), name))
    return out


def encode_like(column: pd.Series, name: str, reference: QidColumn) -> QidColumn:
    """A party's column encoded with the agreed kind, decimals and categories."""
    raw = column.astype(object).to_numpy()
    present = ~pd.isna(raw)
    text = np.full(len(raw), "", dtype=object)
    text[present] = [str(v).strip() for v in raw[present]]
    missing = text == ""
    if reference.numeric:
        values = pd.to_numeric(pd.Series(text).mask(missing), errors="coerce").to_numpy(
            dtype=np.float64
        )
        return QidColumn(
            name, True, text, missing, values, np.empty(0, np.intp), np.empty(0, object),
            reference.decimals,
        )  # fmt: skip
    lookup = pd.Index(reference.categories)
    codes = np.where(missing, -1, lookup.get_indexer(pd.Index(text))).astype(np.intp)
    return QidColumn(name, False, text, missing, np.empty(0), codes, reference.categories, 0)


def pre_order(root: Node) -> list[Node]:
    """Every node, parents first, children in order: the same numbering at every party."""
    out: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(node.children))
    return out


def only_inequalities(path: tuple, name: str) -> bool:
    """Whether a group's path tests QID `name`, and only by inequalities (its value is then
    released as the group's median or mean)."""
    tests = [t for t in path if t.feature == name]
    return bool(tests) and not any(t.equality for t in tests)


class KactusParty:
    """One party's private state; only sums of its vectors and union items leave it."""

    def __init__(
        self,
        df: pd.DataFrame,
        *,
        class_column: str,
        qids: list[str] | None,
        marker: str,
        rng: np.random.Generator,
    ) -> None:
        self.names = validate_columns(df, class_column, qids, marker)
        require_labels(df, class_column)
        self.df = df
        self.class_column = class_column
        self.marker = marker
        self.rng = rng
        self.columns: list[QidColumn] = []
        self.complete = np.zeros(len(df), dtype=bool)
        self.oracle: LocalOracle | None = None
        self.nodes: list[Node] = []
        self.residual = np.empty(0, np.intp)
        self.tagged: list[int] = []
        self.tags: list[np.ndarray] = []
        self.sorted_tags: list[np.ndarray] = []  # the same, each sorted (BELOW's probes)
        self.groups: list[Group] = []
        self.release: pd.DataFrame | None = None

    # ------------------------------------------------------------------ union items

    def qid_items(self) -> list[bytes]:
        """This party's present QID texts, for the QID union."""
        return [
            qid_item(j, t)
            for j, name in enumerate(self.names)
            for t in sorted({str(v).strip() for v in self.df[name].dropna()} - {""})
        ]

    def features(self) -> tuple[FeatureKinds, pd.DataFrame, pd.Series]:
        """Phase 1's learning task on the complete records: numeric QIDs as numbers,
        categorical ones as their agreed codes."""
        kinds = FeatureKinds(self.names, frozenset(c.name for c in self.columns if c.numeric))
        mask = self.complete
        x = pd.DataFrame({c.name: (c.values if c.numeric else c.codes)[mask] for c in self.columns})
        y = self.df[self.class_column].astype(str)[mask].reset_index(drop=True)
        return kinds, x, y

    def domain_items(self) -> list[bytes]:
        """This party's C4.5 domains (after ENCODE), for the domains' union."""
        kinds, x, y = self.features()
        domains = local_domains(x, y, kinds)
        return [
            *(_encode(j, v) for j, values in enumerate(domains.values) for v in values),
            *(_encode(-1, c) for c in domains.classes),
        ]

    # ------------------------------------------------------------------ steps

    def answer(self, step: Step) -> np.ndarray | None:
        """Run one step; the vector for the secure sum, or None for a step without one."""
        if step.name not in STEPS:
            raise FedanonError(f"unknown kACTUS step '{step.name}'")
        if step.count_bits and step.name != COUNT:
            raise FedanonError(f"count_bits on the {step.name} step (count only)")
        handler: Callable[[Step], np.ndarray | None] = getattr(self, f"_on_{step.name}")
        return handler(step)

    def _on_encode(self, step: Step) -> np.ndarray:
        if self.columns:
            raise FedanonError("the QID encoding comes once")
        agreed = agreed_qids(step.items, self.names)
        if not set(self.qid_items()) <= set(step.items):
            raise FedanonError("the QID union misses values of this party's table")
        self.columns = [encode_like(self.df[c.name], c.name, c) for c in agreed]
        self.complete = ~np.logical_or.reduce([c.missing for c in self.columns])
        return np.array([len(self.df)], dtype=np.int64)

    def _on_count(self, step: Step) -> np.ndarray:
        if not self.columns:
            raise FedanonError("count queries before the QID encoding")
        if self.oracle is None:
            if not step.items:
                raise FedanonError("the first count round carries the agreed domains")
            kinds, x, y = self.features()
            schema = agree_schema(kinds, [], lambda _sets: step.items)
            if not set(self.domain_items()) <= set(step.items):
                raise FedanonError("the agreed domains miss values of this party's table")
            self.oracle = LocalOracle(x, y, schema)
        elif step.items:
            raise FedanonError("the agreed domains come once, with the first count round")
        try:
            return pack_fields(self.oracle.count(step.queries), step.count_bits)
        except ValueError as exc:
            raise FedanonError(f"count_bits {step.count_bits}: {exc}") from None

    def _on_place(self, step: Step) -> np.ndarray:
        if self.oracle is None or self.nodes:
            raise FedanonError("the tree comes once, after the count rounds")
        tree = decode_tree(step.ints, step.floats, self.columns)
        root, self.residual = place_records(tree, self.columns)
        self.nodes = pre_order(root)
        return np.array([*(len(x.rows) for x in self.nodes), len(self.residual)], np.int64)

    def _node(self, i: int) -> Node:
        if not 0 <= i < len(self.nodes):
            raise FedanonError(f"kACTUS step names node {i} of {len(self.nodes)}")
        return self.nodes[i]

    def _on_tag(self, step: Step) -> None:
        self.tagged = [int(i) for i in step.ints]
        self.tags = [
            self.rng.integers(0, 2**TAG_BITS, len(self._node(i).rows), dtype=np.int64)
            for i in self.tagged
        ]
        self.sorted_tags = [np.sort(t) for t in self.tags]

    def _on_below(self, step: Step) -> np.ndarray:
        """Tags below each probe: the same number of probes for every tagged node, in node
        order (the leader's many-way search)."""
        if not self.tags or len(step.ints) == 0 or len(step.ints) % len(self.tags):
            raise FedanonError("the same number of probes (at least one) per tagged node")
        probes = np.asarray(step.ints, np.int64).reshape(len(self.tags), -1)
        return np.concatenate(
            [
                np.searchsorted(t, row, side="left")
                for t, row in zip(self.sorted_tags, probes, strict=True)
            ]
        ).astype(np.int64)

    def _on_give(self, step: Step) -> None:
        """Move the records below each cut-off, and the failing children's records, to their
        pruned parents (children of one height: disjoint subtrees)."""
        tags = dict(zip(self.tagged, self.tags, strict=True))
        for parent, complying, failing in decode_give(step.ints):
            moved = [self._node(c).rows for c in failing]
            for child, cutoff in complying:
                node = self._node(child)
                if cutoff > 0:
                    if child not in tags:
                        raise FedanonError(f"node {child} gives records but was not tagged")
                    below = tags[child] < cutoff
                    moved.append(node.rows[below])
                    node.rows = node.rows[~below]
            target = self._node(parent)
            target.rows = np.concatenate([np.empty(0, np.intp), *moved]).astype(np.intp)
            target.children = []
        self.tagged, self.tags, self.sorted_tags = [], [], []

    def _on_groups(self, step: Step) -> None:
        self.groups = []
        for i in step.ints:
            if i < 0:
                rows = np.concatenate([self._node(0).rows, self.residual]).astype(np.intp)
                self.groups.append(Group(np.sort(rows), ()))
            else:
                node = self._node(int(i))
                self.groups.append(Group(np.sort(node.rows), node.path))

    def _pairs(self, ints: np.ndarray) -> list[tuple[int, int]]:
        """(group, QID) pairs; refused unless the group's path tests the QID only by
        inequalities (the only QIDs whose distribution in a group the leader may probe)."""
        if len(ints) % 2:
            raise FedanonError("(group, QID) pairs come in twos")
        pairs = [(int(g), int(j)) for g, j in ints.reshape(-1, 2)]
        for g, j in pairs:
            if not (0 <= g < len(self.groups) and 0 <= j < len(self.columns)):
                raise FedanonError(f"kACTUS step names group {g}, QID {j}: out of range")
            if not self.columns[j].numeric or not only_inequalities(
                self.groups[g].path, self.columns[j].name
            ):
                raise FedanonError(f"group {g} releases QID {j} without a group value")
        return pairs

    def _on_median(self, step: Step) -> np.ndarray:
        pairs = self._pairs(step.ints)
        if len(step.floats) != len(pairs):
            raise FedanonError("one threshold per (group, QID) pair")
        return np.array(
            [
                int((self.columns[j].values[self.groups[g].rows] <= t).sum())
                for (g, j), t in zip(pairs, step.floats, strict=True)
            ],
            np.int64,
        )

    def _on_mean(self, step: Step) -> np.ndarray:
        return np.array(
            [
                int(np.rint(c.values[self.groups[g].rows] * 10**c.decimals).sum())
                for g, j in self._pairs(step.ints)
                for c in (self.columns[j],)
            ],
            np.int64,
        )

    def _on_values(self, step: Step) -> None:
        """Write this party's released rows, QID cells as the groups release them."""
        pairs = self._pairs(step.ints)
        if len(step.floats) != len(pairs):
            raise FedanonError("one value per (group, QID) pair")
        values = {
            (g, self.columns[j].name): float(v)
            for (g, j), v in zip(pairs, step.floats, strict=True)
        }
        rows = np.sort(np.concatenate([np.empty(0, np.intp), *(g.rows for g in self.groups)]))
        out = self.df.iloc[rows].reset_index(drop=True)
        for column in self.columns:
            cells = released_cells(column, self.groups, self.marker, _value_of(values, column))
            out[column.name] = pd.Series(cells[rows], dtype=object)
        self.release = out


def _value_of(values: dict[tuple[int, str], float], column: QidColumn) -> Callable:
    def value(g: int, _: Group) -> float:
        if (g, column.name) not in values:
            raise FedanonError(f"no value for QID '{column.name}' of group {g}")
        return values[g, column.name]

    return value


# ---------------------------------------------------------------------------- flat forms


def encode_tree(tree: TreeNode, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The tree in pre-order (children in the tree's order): per node [QID position or -1,
    numeric, number of branches, branch keys (category codes; 0/1 for <=/>)], thresholds."""
    ints: list[int] = []
    floats: list[float] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        keys = list(node.children)
        j = -1 if node.feature is None else names.index(str(node.feature))
        ints += [j, int(node.numeric), len(keys), *(int(key) for key in keys)]  # type: ignore[call-overload]
        floats.append(float(node.threshold))
        stack.extend(reversed(node.children.values()))
    return np.array(ints, np.int64), np.array(floats, np.float64)


def decode_tree(ints: np.ndarray, floats: np.ndarray, columns: list[QidColumn]) -> TreeNode:
    """The leader's tree, checked against the agreed encoding."""
    at = 0

    def take() -> int:
        nonlocal at
        if at >= len(ints):
            raise FedanonError("the tree is cut short")
        at += 1
        return int(ints[at - 1])

    nodes: list[TreeNode] = []
    root: TreeNode | None = None
    stack: list[tuple[TreeNode | None, object]] = [(None, None)]
    while stack:
        parent, key = stack.pop()
        j, numeric, branches = take(), take(), take()
        if len(nodes) >= len(floats):
            raise FedanonError("the tree has fewer thresholds than nodes")
        threshold = float(floats[len(nodes)])
        if j == -1:
            node = TreeNode(None)
        elif 0 <= j < len(columns) and bool(numeric) == columns[j].numeric:
            node = TreeNode(columns[j].name, bool(numeric), threshold)
        else:
            raise FedanonError(f"the tree tests QID {j} with the wrong kind of test")
        keys = [take() for _ in range(branches)]
        if j >= 0 and columns[j].numeric:
            if keys != [0, 1]:
                raise FedanonError("a numeric test has the branches <= and >")
        elif j >= 0 and not all(0 <= c < len(columns[j].categories) for c in keys):
            raise FedanonError(f"the tree tests QID {j} on an unknown category")
        nodes.append(node)
        if parent is None:
            root = node
        else:
            parent.children[key] = node
        typed = [bool(c) for c in keys] if numeric else keys
        stack.extend((node, c) for c in reversed(typed))
    if at != len(ints) or len(nodes) != len(floats) or root is None:
        raise FedanonError("the tree has trailing values")
    return root


Give = list[tuple[int, list[tuple[int, int]], list[int]]]


def encode_give(steps: Give) -> np.ndarray:
    """Per pruned parent: [parent, complying count, (child, cut-off)*, failing count,
    failing*]; a cut-off of 0 gives nothing (tags are non-negative)."""
    out: list[int] = []
    for parent, complying, failing in steps:
        out += [parent, len(complying), *(v for pair in complying for v in pair)]
        out += [len(failing), *failing]
    return np.array(out, np.int64)


def decode_give(ints: np.ndarray) -> Give:
    values = [int(v) for v in ints]
    steps: Give = []
    at = 0
    try:
        while at < len(values):
            parent, count = values[at], values[at + 1]
            at += 2
            complying = [(values[at + 2 * i], values[at + 2 * i + 1]) for i in range(count)]
            at += 2 * count
            failing = values[at + 1 : at + 1 + values[at]]
            if len(failing) != values[at] or count < 0:
                raise IndexError
            at += 1 + values[at]
            steps.append((parent, complying, failing))
    except IndexError:
        raise FedanonError("the give step is cut short") from None
    return steps
