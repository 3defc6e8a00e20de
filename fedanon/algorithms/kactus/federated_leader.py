"""Federated kACTUS at the leader: decides everything from sums and unions.

The leader half of `fedanon.algorithms.kactus.federated`. It talks to the parties through a
:class:`Channel` only: a step sent to every party, then (for the steps with a vector) the secure
sum of their answers, and the secure set union of their QID texts and C4.5 domains. In process
the channel calls `KactusParty` objects; in the federation it is the leader kind's RPCs
(leader/kinds/kactus.py). The leader never holds a party's vector, only totals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from fedanon.algorithms.kactus.federated_party import (
    BELOW,
    COUNT,
    ENCODE,
    GIVE,
    GROUPS,
    MEAN,
    MEDIAN,
    PLACE,
    TAG,
    TAG_BITS,
    VALUES,
    Step,
    agreed_qids,
    encode_give,
    encode_like,
    encode_tree,
    only_inequalities,
    pre_order,
)
from fedanon.algorithms.kactus.phase2 import gift_size
from fedanon.algorithms.kactus.tree import Condition, place_records
from fedanon.algorithms.tabular import QidColumn
from fedanon.errors import FedanonError
from fedanon.packed_counts import packed_length, unpack_fields
from fedanon.utility.c45 import TreeNode
from fedanon.utility.c45_counts import FeatureKinds, Query, Schema, agree_schema, fit_from_counts


class Channel(Protocol):
    """The leader's only view of the parties."""

    def union(self, stage: str) -> list[bytes]:
        """The secure set union of every party's items for `stage` ("qids" or "domains")."""
        ...

    def ask(self, step: Step, length: int) -> np.ndarray:
        """Send `step` to every party, then the secure sum of their vectors (`length` each)."""
        ...

    def tell(self, step: Step) -> None:
        """Send `step` to every party (no vector)."""
        ...


@dataclass
class Plan:
    """Phase 2 decided from global sizes: per pruned parent (in post-order) its complying
    children and how many records each gives; the released groups (node, size)."""

    steps: list[tuple[int, list[int], list[int], list[int]]]  # parent, complying, gifts, failing
    heights: list[int]
    groups: list[tuple[int, int]]
    root_released: bool
    dropped: int
    donated: int


@dataclass
class Led:
    """What the leader decided: the tree, the plan, each group's path, the record count."""

    tree: TreeNode
    plan: Plan
    paths: list[tuple[Condition, ...]]
    records: int
    sums: int


class _Counter:
    """The channel with a count of secure-sum rounds."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.rounds = 0

    def ask(self, step: Step, length: int) -> np.ndarray:
        self.rounds += 1
        total = np.asarray(self.channel.ask(step, length), dtype=np.int64)
        if total.shape != (length,):
            raise FedanonError(f"kACTUS step {step.name}: a sum of {total.size}, not {length}")
        return total


class _Oracle:
    """C4.5's count oracle through the channel: one COUNT step and one sum per batch; the
    first carries the agreed domains.

    Every count is at most the record count n (the encode step's sum), so the parties pack
    their counts in fields of n's bit length (`count_bits`), several per uint64 word, as
    federated C4.5's do: the sum adds field by field without a carry and moves fewer words."""

    def __init__(self, counter: _Counter, schema: Schema, items: list[bytes], n: int) -> None:
        self.counter = counter
        self.schema = schema
        self.items: list[bytes] | None = items
        self.bits = max(1, n.bit_length())

    def count(self, queries: Sequence[Query]) -> np.ndarray:
        step = Step(COUNT, items=self.items or [], queries=list(queries), count_bits=self.bits)
        self.items = None
        counts = sum(self.schema.size(q) for q in queries)
        words = self.counter.ask(step, packed_length(counts, self.bits))
        return unpack_fields(words.astype(np.uint64), self.bits, counts).astype(np.int64)


def lead_kactus(
    channel: Channel,
    names: list[str],
    *,
    k: int,
    prune: bool,
    narrow: bool,
    numeric: str,
    rng: np.random.Generator,
) -> Led:
    """Drive one federated kACTUS run; the parties then hold their released rows."""
    counter = _Counter(channel)
    items = channel.union("qids")
    agreed = agreed_qids(items, names)
    n = int(counter.ask(Step(ENCODE, items=items), 1)[0])
    if k > n:
        raise FedanonError(f"k must be between 2 and the number of records ({n}), got {k}")
    tree = _phase1(counter, channel, agreed, names, k, prune, narrow, n)
    ints, floats = encode_tree(tree, names)
    # The tree's nodes and paths, numbered as the parties number them (no record placed).
    empty = [encode_like(pd.Series([], dtype=object), c.name, c) for c in agreed]
    root, _ = place_records(tree, empty)
    nodes = pre_order(root)
    sizes = counter.ask(Step(PLACE, ints, floats), len(nodes) + 1)
    number = {id(x): i for i, x in enumerate(nodes)}
    plan = _plan([[number[id(c)] for c in x.children] for x in nodes], sizes, k, rng)
    _give(counter, channel, plan)
    paths = [nodes[g].path if g >= 0 else () for g, _ in plan.groups]
    channel.tell(Step(GROUPS, np.array([g for g, _ in plan.groups], np.int64)))
    _group_values(counter, channel, agreed, plan, paths, numeric)
    return Led(tree, plan, paths, n, counter.rounds)


def _phase1(
    counter: _Counter,
    channel: Channel,
    agreed: list[QidColumn],
    names: list[str],
    k: int,
    prune: bool,
    narrow: bool,
    n: int,
) -> TreeNode:
    """The tree `induce` fits on the pooled complete records, from secure sums of counts."""
    kinds = FeatureKinds(names, frozenset(c.name for c in agreed if c.numeric))
    items = channel.union("domains")
    schema = agree_schema(kinds, [], lambda _sets: items)
    if len(schema.classes) < 2:
        raise FedanonError("the class column holds a single value: nothing to learn")
    oracle = _Oracle(counter, schema, items, n)
    return fit_from_counts(oracle, schema, min_leaf=k, prune=prune, narrow=narrow).tree()


def _plan(children: list[list[int]], sizes: np.ndarray, k: int, rng: np.random.Generator) -> Plan:
    """Phase 2's decisions from the global sizes, as centralized kACTUS takes them."""
    size = [int(s) for s in sizes[:-1]]
    residual = int(sizes[-1])
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
    return Plan(steps, heights, groups, released, 0 if released else left, donated)


def _give(counter: _Counter, channel: Channel, plan: Plan) -> None:
    """Height by height (the subtrees of one height are disjoint): every child that gives
    records has its cut-off searched on secure sums of tags below probes; then every party
    moves the records below the cut-offs, and the failing children's, to the pruned parent."""
    for h in sorted(set(plan.heights)):
        steps = [s for s, sh in zip(plan.steps, plan.heights, strict=True) if sh == h]
        searches = [
            (child, gift) for _, complying, gifts, _ in steps
            for child, gift in zip(complying, gifts, strict=True) if gift
        ]  # fmt: skip
        cutoffs = _cutoffs(counter, channel, searches)
        cut = dict(zip((c for c, _ in searches), cutoffs, strict=True))
        channel.tell(
            Step(
                GIVE,
                encode_give(
                    [(p, [(c, cut.get(c, 0)) for c in comp], fail) for p, comp, _, fail in steps]
                ),
            )
        )


#: Points probed per cut-off search in one round: each round narrows every search
#: TAG_PROBES + 1 ways, so a 62-bit cut-off takes 11 rounds, not 62 as by bisection. The
#: leader learns the count of secret uniform tags below more points, which says nothing of
#: the records (docs/leakage.md). Medians stay a bisection (one probe): more probes would
#: show more of a group's value distribution.
TAG_PROBES = 63


def smallest_reaching(
    lo: Sequence[int],
    hi: Sequence[int],
    target: np.ndarray,
    count: Callable[[np.ndarray], np.ndarray],
    probes: int,
) -> list[int]:
    """Per search i, the smallest x in [lo_i, hi_i] with count_i(x) >= target_i, where count_i
    is non-decreasing and hi_i reaches. Each round asks `count` once, at a (searches x probes)
    array of points spread over every open interval (from lo up to hi - 1, ascending)."""
    low, high = [int(v) for v in lo], [int(v) for v in hi]
    while any(a < b for a, b in zip(low, high, strict=True)):
        points = np.array(
            [[a + (b - a) * (j + 1) // (probes + 1) for j in range(probes)]
             for a, b in zip(low, high, strict=True)],
            dtype=np.int64,
        )  # fmt: skip
        reached = count(points).reshape(points.shape) >= np.asarray(target)[:, None]
        for i, row in enumerate(reached):
            if low[i] >= high[i]:
                continue
            hits = np.flatnonzero(row)
            first = int(hits[0]) if hits.size else probes
            if first < probes:
                high[i] = int(points[i, first])
            if first > 0:
                low[i] = int(points[i, first - 1]) + 1
    return low


def _cutoffs(counter: _Counter, channel: Channel, searches: list[tuple[int, int]]) -> list[int]:
    """Per search, the smallest t with exactly its gift of tags below it, over all parties,
    by a many-way search on secure sums; tags drawn again (rarely: 62-bit ties) where none
    exists."""
    want = np.array([g for _, g in searches], dtype=np.int64)
    if len(want) == 0:
        return []
    children = np.array([c for c, _ in searches], np.int64)

    def below(points: np.ndarray) -> np.ndarray:
        return counter.ask(Step(BELOW, points.ravel()), points.size)

    while True:
        channel.tell(Step(TAG, children))
        everything = [2**TAG_BITS] * len(want)
        lo = smallest_reaching([0] * len(want), everything, want, below, TAG_PROBES)
        if (below(np.array(lo, np.int64)[:, None]) == want).all():
            return lo


def _group_values(
    counter: _Counter,
    channel: Channel,
    agreed: list[QidColumn],
    plan: Plan,
    paths: list[tuple[Condition, ...]],
    numeric: str,
) -> None:
    """(group, QID) -> value for every QID a group's path tests only by inequalities: the
    median by a secure-sum search over the agreed sorted values, or the mean from sums of
    fixed-point values; then every party writes its release (VALUES)."""
    wanted = [
        (g, j)
        for g, path in enumerate(paths)
        for j, column in enumerate(agreed)
        if only_inequalities(path, column.name)
    ]
    sizes = [s for _, s in plan.groups]
    pairs = np.array([v for pair in wanted for v in pair], np.int64)
    values: list[float] = []
    if wanted and numeric == "mean":
        sums = counter.ask(Step(MEAN, pairs), len(wanted))
        values = [
            float(int(t) / 10 ** agreed[j].decimals / sizes[g])
            for (g, j), t in zip(wanted, sums, strict=True)
        ]
    elif wanted:
        values = _medians(counter, agreed, wanted, sizes)
    channel.tell(Step(VALUES, pairs, np.array(values, np.float64)))


def _medians(
    counter: _Counter, agreed: list[QidColumn], wanted: list[tuple[int, int]], sizes: list[int]
) -> list[float]:
    """The two middle ranks (equal for an odd size) searched over the agreed sorted values by
    bisection; np.median averages their values, as centralized kACTUS does."""
    domains = {j: np.unique(agreed[j].values) for _, j in wanted}
    ranks = np.array([[(sizes[g] - 1) // 2, sizes[g] // 2] for g, _ in wanted]).ravel()
    searched = [(g, j) for g, j in wanted for _ in range(2)]

    def at_most(points: np.ndarray) -> np.ndarray:
        """Each searched (group, QID)'s values at most its row of points (domain indices)."""
        pairs = [v for (g, j), row in zip(searched, points, strict=True) for _ in row
                 for v in (g, j)]  # fmt: skip
        thresholds = [domains[j][m] for (_, j), row in zip(searched, points, strict=True)
                      for m in row]  # fmt: skip
        return counter.ask(
            Step(MEDIAN, np.array(pairs, np.int64), np.array(thresholds, np.float64)),
            points.size,
        )

    highest = [len(domains[j]) - 1 for _, j in searched]
    found = smallest_reaching([0] * len(searched), highest, ranks + 1, at_most, probes=1)
    middle = np.array([domains[j][i] for (_, j), i in zip(searched, found, strict=True)])
    return [float(np.median(middle[2 * i : 2 * i + 2])) for i in range(len(wanted))]
