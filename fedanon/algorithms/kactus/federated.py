"""Federated kACTUS over horizontally partitioned tables: the algorithm core, run in process.

The release is the one centralized kACTUS would give on the pooled table (same tree, same
groups; which records fill a donation is random in both), while no party shows a record or a
per-party count. Every message is one of two primitives, passed in as callables so that the
daemons can put the secure protocols behind them (the core imports no crypto):

- ``union``: a set union of byte strings (the secure set union): the agreed values of every QID
  (categories, numbers, decimals) and of the C4.5 features and classes;
- ``add``: a sum of the parties' integer vectors (ring or pairwise secure sum): every count.

Steps (docs/federated_classification.md gives what each one shows to whom):

1. Agree on the QID encoding: the union of (QID, cell text) over all records decides which QIDs
   are numeric (every present text parses, as `encode_qid` decides on the pooled table), their
   decimals and the sorted categories; each party encodes its table with them.
2. Phase 1: C4.5 grown from secure sums of counts (`fedanon.utility.c45_counts`) on the records
   with every QID present, categories as their global codes, min_leaf = k: the pooled tree.
3. Each party places its records in the tree (`place_records`); the secure sum of the per-leaf
   counts (and the root residual) gives the leader every global size, from which it decides all
   of phase 2 alone: which children comply, how many records each pruned parent receives
   (`gift_size`), and how many each complying child gives, drawn as centralized kACTUS's random
   choice draws them (multivariate hypergeometric over the surplus).
4. Which records a child gives: every party tags its records there with secret random 62-bit
   numbers; the leader searches by bisection, on secure sums of "how many tags are below t",
   the cut-off below which exactly the required number of tags lie. The parties give the
   records below it. No party's count is shown; only totals at the leader's probes.
5. Group values (median or mean of a QID the group's path tests only by inequalities): the
   median by a secure-sum search over the agreed sorted values for the middle ranks, the mean
   from secure sums of fixed-point values.
6. Each party writes its released rows; the integrated release is their union (in the daemon,
   the secure set union, which also shuffles), checked by the independent k-anonymity checker.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from fedanon.algorithms.kactus.api import NUMERIC_RULES, released_cells
from fedanon.algorithms.kactus.phase2 import Group, gift_size
from fedanon.algorithms.kactus.tree import Condition, Node, place_records
from fedanon.algorithms.tabular import (
    QidColumn,
    checked_release,
    encode_qid,
    generator,
    require_labels,
    validate_columns,
)
from fedanon.errors import FedanonError
from fedanon.release import Release
from fedanon.utility.c45 import TreeNode
from fedanon.utility.c45_counts import (
    Adder,
    FeatureKinds,
    FederatedOracle,
    LocalOracle,
    Union,
    agree_schema,
    fit_from_counts,
    local_domains,
    plain_sum,
    plain_union,
)

# Random tags for choosing donated records live in [0, 2**_TAG_BITS).
_TAG_BITS = 62


@dataclass
class _Party:
    """One party's private state; only counts computed from it leave (through `add`)."""

    df: pd.DataFrame
    columns: list[QidColumn] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)  # the tree in pre-order, with its records
    residual: np.ndarray = field(default_factory=lambda: np.empty(0, np.intp))
    rng: np.random.Generator = field(default_factory=np.random.default_rng)
    tags: list[np.ndarray] = field(default_factory=list)


@dataclass
class FederatedOutcome:
    """What the leader decided, for reports and tests: the tree and every group's size."""

    tree: TreeNode
    group_paths: list[tuple[Condition, ...]]  # each released group's path (the root rest: ())
    group_sizes: list[int]
    dropped: int
    donated: int
    rounds: dict[str, int]


def anonymize_kactus_federated(
    parts: Sequence[pd.DataFrame],
    *,
    class_column: str,
    qids: Sequence[str] | None = None,
    k: int = 50,
    seed: int | None = None,
    marker: str = "?",
    prune: bool = True,
    numeric: str = "median",
    union: Union = plain_union,
    add: Adder = plain_sum,
    narrow: bool = False,
) -> tuple[Release, FederatedOutcome]:
    """k-anonymize the union of `parts` (one table per party) by kACTUS without pooling them.

    Options are those of :func:`fedanon.algorithms.kactus.api.anonymize_kactus`; `union` and
    `add` are the set-union and vector-sum primitives (plain by default; the secure ones in
    the federation and in the tests); `narrow` is `fit_from_counts`'s option.
    """
    if numeric not in NUMERIC_RULES:
        raise FedanonError(f"numeric rule is one of {', '.join(NUMERIC_RULES)}, not {numeric!r}")
    if not parts:
        raise FedanonError("federated kACTUS needs at least one party")
    names = validate_columns(parts[0], class_column, qids, marker)
    for i, df in enumerate(parts):
        if validate_columns(df, class_column, qids, marker) != names:
            raise FedanonError(f"party {i}: its QID columns differ from party 0's")
        require_labels(df, class_column)
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
        raise FedanonError(f"k must be an integer of at least 2, got {k!r}")
    began = time.perf_counter()
    rng = generator(seed)
    party_seeds = np.random.SeedSequence(rng.integers(2**63)).spawn(len(parts))
    parties = [
        _Party(df, rng=np.random.default_rng(s)) for df, s in zip(parts, party_seeds, strict=True)
    ]
    rounds = {"union": 0, "sum": 0}

    def total(vectors: list[np.ndarray]) -> np.ndarray:
        rounds["sum"] += 1
        return np.asarray(add(vectors), dtype=np.int64)

    n = int(total([np.array([len(p.df)]) for p in parties])[0])
    if k > n:
        raise FedanonError(f"k must be between 2 and the number of records ({n}), got {k}")
    agreed = _encode_qids(parties, names, union, rounds)
    tree = _phase1(parties, names, class_column, k, prune, narrow, union, add, rounds)
    grown = time.perf_counter()
    for p in parties:
        root, p.residual = place_records(tree, p.columns)
        p.nodes = _pre_order(root)
    sizes = total([np.array([*(len(x.rows) for x in p.nodes), len(p.residual)]) for p in parties])
    plan = _plan(_skeleton(tree), sizes[:-1], int(sizes[-1]), k, rng)
    _give(parties, plan, total)
    groups = _groups(parties, plan)
    values = _group_values(parties, agreed, plan, groups, numeric, total)
    tables = [_party_release(p, i, groups, values, marker) for i, p in enumerate(parties)]
    merged = pd.concat(tables, ignore_index=True)
    table = merged.iloc[rng.permutation(len(merged))].reset_index(drop=True)
    report = _report(names, k, marker, table, plan, n, numeric)
    report["seconds"] = {
        "tree": round(grown - began, 4),
        "anonymize": round(time.perf_counter() - grown, 4),
    }
    outcome = FederatedOutcome(
        tree,
        # Every party holds the same paths; the leader reads them off the tree it grew.
        [parties[0].nodes[g].path if g >= 0 else () for g, _ in plan.groups],
        [s for _, s in plan.groups],
        plan.dropped,
        plan.donated,
        rounds,
    )
    return checked_release(table, report), outcome


# ---------------------------------------------------------------------------- encoding


def _encode_qids(
    parties: list[_Party], names: list[str], union: Union, rounds: dict[str, int]
) -> list[QidColumn]:
    """Step 1: the union of (QID, present cell text) decides kinds, decimals and categories as
    `encode_qid` decides them on the pooled table; every party encodes with them. Returns the
    leader's encoding of the agreed values (numeric QIDs: the agreed domain)."""
    local = []
    for p in parties:
        items: list[bytes] = []
        for j, name in enumerate(names):
            texts = {str(v).strip() for v in p.df[name].dropna()} - {""}
            items.extend(j.to_bytes(4, "big") + t.encode("utf-8") for t in texts)
        local.append(items)
    rounds["union"] += 1
    agreed: list[list[str]] = [[] for _ in names]
    references: list[QidColumn] = []
    for item in union(local):
        agreed[int.from_bytes(item[:4], "big")].append(item[4:].decode("utf-8"))
    for j, name in enumerate(names):
        if not agreed[j]:
            raise FedanonError(f"QID column '{name}' holds only missing values")
        reference = encode_qid(pd.Series(agreed[j], dtype=object), name)
        references.append(reference)
        for p in parties:
            p.columns.append(_encode_like(p.df[name], name, reference))
    return references


def _encode_like(column: pd.Series, name: str, reference: QidColumn) -> QidColumn:
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


# ---------------------------------------------------------------------------- phase 1


def _phase1(
    parties: list[_Party],
    names: list[str],
    class_column: str,
    k: int,
    prune: bool,
    narrow: bool,
    union: Union,
    add: Adder,
    rounds: dict[str, int],
) -> TreeNode:
    """Step 2: the tree `induce` fits on the pooled complete records, from counts."""
    kinds = FeatureKinds(names, frozenset(c.name for c in parties[0].columns if c.numeric))
    tables = []
    for p in parties:
        complete = ~np.logical_or.reduce([c.missing for c in p.columns])
        features = pd.DataFrame(
            {c.name: (c.values if c.numeric else c.codes)[complete] for c in p.columns}
        )
        labels = p.df[class_column].astype(str)[complete].reset_index(drop=True)
        tables.append((features, labels))
    rounds["union"] += 1
    schema = agree_schema(kinds, [local_domains(x, y, kinds) for x, y in tables], union)
    if len(schema.classes) < 2:
        raise FedanonError(f"class column '{class_column}' holds a single value: nothing to learn")
    oracle = FederatedOracle([LocalOracle(x, y, schema) for x, y in tables], add)
    model = fit_from_counts(oracle, schema, min_leaf=k, prune=prune, narrow=narrow)
    rounds["sum"] += oracle.rounds
    return model.tree()


def _pre_order(root: Node) -> list[Node]:
    """Every node, parents first, children in order: the same numbering at every party."""
    out: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(node.children))
    return out


# ---------------------------------------------------------------------------- phase 2


@dataclass
class _Plan:
    """Phase 2 decided from global sizes: per pruned parent (in post-order) its complying
    children and how many records each gives; the released groups (node, size)."""

    steps: list[tuple[int, list[int], list[int], list[int]]]  # parent, complying, gifts, failing
    heights: list[int]
    groups: list[tuple[int, int]]
    root_released: bool
    dropped: int
    donated: int


def _skeleton(tree: TreeNode) -> list[list[int]]:
    """The leader's view of the tree: each node's children, nodes numbered in the pre-order
    `_pre_order` numbers the parties' placed trees in (children in the tree's order)."""
    children: list[list[int]] = []
    stack = [(tree, -1)]
    while stack:
        node, parent = stack.pop()
        children.append([])
        if parent >= 0:
            children[parent].append(len(children) - 1)
        stack.extend((c, len(children) - 1) for c in reversed(node.children.values()))
    return children


def _plan(
    children: list[list[int]],
    leaf_sizes: np.ndarray,
    residual: int,
    k: int,
    rng: np.random.Generator,
) -> _Plan:
    size = [int(s) for s in leaf_sizes]
    height = [0] * len(children)
    steps = []
    heights = []
    groups: list[tuple[int, int]] = []
    donated = 0
    for parent in reversed(range(len(children))):  # reverse pre-order: children first
        kids = children[parent]
        if not kids:
            continue
        height[parent] = 1 + max(height[c] for c in kids)
        gift = gift_size([size[c] for c in kids], k)
        complying = [c for c in kids if size[c] >= k]
        failing = [c for c in kids if size[c] < k]
        gifts = [0] * len(complying)
        if gift:
            surplus = np.array([size[c] - k for c in complying], dtype=np.int64)
            gifts = [int(g) for g in rng.multivariate_hypergeometric(surplus, gift)]
        groups.extend((c, size[c] - g) for c, g in zip(complying, gifts, strict=True))
        size[parent] = sum(size[c] for c in failing) + gift
        donated += gift
        steps.append((parent, complying, gifts, failing))
        heights.append(height[parent])
    left = size[0] + residual
    released = left >= k
    if released:
        groups.append((-1, left))
    return _Plan(steps, heights, groups, released, 0 if released else left, donated)


def _give(parties: list[_Party], plan: _Plan, total: Callable[[list[np.ndarray]], np.ndarray]):
    """Step 4, height by height (the subtrees of one height are disjoint): every child that
    gives records has its cut-off searched on secure sums; then every party moves its records
    below the cut-offs, and its non-complying children's records, to the pruned parent."""
    for h in sorted(set(plan.heights)):
        steps = [s for s, sh in zip(plan.steps, plan.heights, strict=True) if sh == h]
        searches = [
            (child, gift) for _, complying, gifts, _ in steps
            for child, gift in zip(complying, gifts, strict=True) if gift
        ]  # fmt: skip
        for p in parties:
            p.tags = [
                p.rng.integers(0, 2**_TAG_BITS, len(p.nodes[c].rows), dtype=np.int64)
                for c, _ in searches
            ]
        cutoffs = _cutoffs(parties, [g for _, g in searches], total)
        for p in parties:
            given = {
                c: p.nodes[c].rows[tags < t]
                for (c, _), tags, t in zip(searches, p.tags, cutoffs, strict=True)
            }
            for parent, complying, _, failing in steps:
                moved = [p.nodes[c].rows for c in failing]
                moved += [given[c] for c in complying if c in given]
                for c in complying:
                    if c in given:
                        p.nodes[c].rows = np.setdiff1d(p.nodes[c].rows, given[c])
                node = p.nodes[parent]
                node.rows = np.concatenate([np.empty(0, np.intp), *moved]).astype(np.intp)
                node.children = []


def _cutoffs(
    parties: list[_Party], targets: list[int], total: Callable[[list[np.ndarray]], np.ndarray]
) -> list[int]:
    """Per search, the smallest t with exactly targets[i] tags below it, over all parties,
    found by bisection on secure sums of the parties' counts below the probes; tags drawn
    again (rarely: 62-bit ties) where no such t exists."""
    want = np.array(targets, dtype=np.int64)
    while True:
        lo = np.zeros(len(want), dtype=np.int64)
        hi = np.full(len(want), 2**_TAG_BITS, dtype=np.int64)
        while (lo < hi).any():
            mid = lo + (hi - lo) // 2
            below = total([_count_below(p.tags, mid) for p in parties])
            enough = below >= want
            hi = np.where(enough & (lo < hi), mid, hi)
            lo = np.where(~enough & (lo < hi), mid + 1, lo)
        if len(want) == 0 or (total([_count_below(p.tags, lo) for p in parties]) == want).all():
            return [int(t) for t in lo]
        for p in parties:
            p.tags = [p.rng.integers(0, 2**_TAG_BITS, len(t), dtype=np.int64) for t in p.tags]


def _count_below(tags: list[np.ndarray], probes: np.ndarray) -> np.ndarray:
    return np.array([int((t < x).sum()) for t, x in zip(tags, probes, strict=True)], np.int64)


def _groups(parties: list[_Party], plan: _Plan) -> list[list[Group]]:
    """Each party's share of every released group (same order at every party)."""
    out = []
    for p in parties:
        mine = []
        for node_id, _ in plan.groups:
            if node_id < 0:
                rows = np.concatenate([p.nodes[0].rows, p.residual]).astype(np.intp)
                mine.append(Group(np.sort(rows), ()))
            else:
                node = p.nodes[node_id]
                mine.append(Group(np.sort(node.rows), node.path))
        out.append(mine)
    return out


def _group_values(
    parties: list[_Party],
    agreed: list[QidColumn],
    plan: _Plan,
    groups: list[list[Group]],
    numeric: str,
    total: Callable[[list[np.ndarray]], np.ndarray],
) -> dict[tuple[int, str], float]:
    """Step 5: (group, QID) -> value, for every QID a group's path tests only by
    inequalities."""
    wanted = [
        (g, j)
        for g, group in enumerate(groups[0])
        for j, column in enumerate(parties[0].columns)
        if _only_inequalities(group, column.name)
    ]
    sizes = [s for _, s in plan.groups]
    if not wanted:
        return {}
    columns = [j for _, j in wanted]
    if numeric == "mean":
        scales = [10 ** parties[0].columns[j].decimals for j in columns]
        sums = total(
            [
                np.array(
                    [
                        int(np.rint(p.columns[j].values[gs[g].rows] * s).sum())
                        for (g, j), s in zip(wanted, scales, strict=True)
                    ],
                    dtype=np.int64,
                )
                for p, gs in zip(parties, groups, strict=True)
            ]
        )
        return {
            (g, parties[0].columns[j].name): float(int(t) / s / sizes[g])
            for (g, j), t, s in zip(wanted, sums, scales, strict=True)
        }
    domains = {j: np.unique(agreed[j].values) for j in set(columns)}
    # The two middle ranks (equal for an odd size); np.median averages their values.
    ranks = np.array([[(sizes[g] - 1) // 2, sizes[g] // 2] for g, _ in wanted]).ravel()
    searched = [(g, j) for g, j in wanted for _ in range(2)]
    lo = np.zeros(len(ranks), dtype=np.int64)
    hi = np.array([len(domains[j]) - 1 for _, j in searched], dtype=np.int64)
    while (lo < hi).any():
        mid = lo + (hi - lo) // 2
        counts = total(
            [
                np.array(
                    [
                        int((p.columns[j].values[gs[g].rows] <= domains[j][m]).sum())
                        for (g, j), m in zip(searched, mid, strict=True)
                    ],
                    dtype=np.int64,
                )
                for p, gs in zip(parties, groups, strict=True)
            ]
        )
        enough = counts >= ranks + 1
        hi = np.where(enough & (lo < hi), mid, hi)
        lo = np.where(~enough & (lo < hi), mid + 1, lo)
    middle = np.array([domains[j][i] for (_, j), i in zip(searched, lo, strict=True)])
    return {
        (g, parties[0].columns[j].name): float(np.median(middle[2 * i : 2 * i + 2]))
        for i, (g, j) in enumerate(wanted)
    }


def _only_inequalities(group: Group, name: str) -> bool:
    tests = [t for t in group.path if t.feature == name]
    return bool(tests) and not any(t.equality for t in tests)


def _party_release(
    party: _Party,
    index: int,
    groups: list[list[Group]],
    values: dict[tuple[int, str], float],
    marker: str,
) -> pd.DataFrame:
    """Step 6 at one party: its released rows, QID cells as the groups release them."""
    mine = groups[index]
    rows = np.sort(np.concatenate([np.empty(0, np.intp), *(g.rows for g in mine)]))
    out = party.df.iloc[rows].reset_index(drop=True)
    for column in party.columns:
        cells = released_cells(column, mine, marker, _value_of(values, column.name))
        out[column.name] = pd.Series(cells[rows], dtype=object)
    return out


def _value_of(values: dict[tuple[int, str], float], name: str) -> Callable[[int, Group], float]:
    return lambda g, _: values[g, name]


def _report(
    names: list[str], k: int, marker: str, table: pd.DataFrame, plan: _Plan, n: int, rule: str
) -> dict[str, Any]:
    sizes = [s for _, s in plan.groups]
    return {
        "method": "kactus",
        "parameters": {"k": k, "qids": names, "marker": marker, "numeric": rule},
        "records": n,
        "released": len(table),
        "groups": {"count": len(sizes), "min_size": min(sizes) if sizes else None},
        "suppressed_cells": {name: int((table[name] == marker).sum()) for name in names},
        "dropped": plan.dropped,
        "donated": plan.donated,
        "federated": True,
    }
