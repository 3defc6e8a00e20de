"""Top-down specialization to LKC-privacy (paper, Algorithm 1; distributed: Algorithms 2-3).

The engine is the leader's half of the algorithm. It never sees records: it asks a *count
source* for the statistics of newly created partitions (in the canonical layout of
:mod:`fedanon.algorithms.tds.layout`) and tells it which specialization to apply. The in-process
:class:`~fedanon.algorithms.tds.local_party.LocalParty` is one count source (centralized mode); the
federation behind the gRPC ring is another (distributed mode), so both modes run this one loop
and make the same choices.

Per iteration: pick Best = the valid candidate with the highest score (ties: lower attribute
index in the schema, then lower node id = taxonomy order), send it, receive the statistics of the
partitions it created, then update scores and re-check validity only where groups can have
changed (see :mod:`fedanon.algorithms.tds.validity`). Invalid candidates are dropped for good
(anti-monotonicity); zero-score valid candidates are still performed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from typing import Any, Protocol, cast

import numpy as np

from fedanon.algorithms.tds.layout import (
    DynamicSplit,
    PartitionTable,
    Specialization,
    StatsLayout,
    run_ends,
)
from fedanon.algorithms.tds.prefix import Prefix
from fedanon.algorithms.tds.scores import (
    SCORES,
    best_binary_split,
    discernibility_reductions,
    info_gain,
)
from fedanon.algorithms.tds.suppression import (
    budget_records,
    suppression_measures,
    violating,
)
from fedanon.algorithms.tds.validity import GroupExtremes, Validator
from fedanon.errors import FedanonError, InfeasibleError
from fedanon.schema import LKCParams, Schema

ORDERS = ("free-first", "per-record")


class CountSource(Protocol):
    """Where the engine's statistics come from (one in-process party, or a federation)."""

    def atom_histogram(self, attr: int, node: int) -> np.ndarray:
        """Class counts per atom under `node` (dynamic numerical splits only)."""
        ...

    def start(self, splits: Sequence[DynamicSplit]) -> np.ndarray:
        """Flat statistics of the initial partition."""
        ...

    def specialize(self, step: Specialization) -> np.ndarray:
        """Apply `step`; flat statistics of the partitions it created."""
        ...


class ResumableSource(CountSource, Protocol):
    """A count source the engine can resume from a prefix (prefix.py)."""

    def resume(self, steps: Sequence[Specialization]) -> np.ndarray:
        """Start and apply `steps`; flat statistics of the live partitions after them."""
        ...


@dataclass
class Candidate:
    """A cut value that may be specialized, with the counts its score needs."""

    attr: int
    node: int
    total: np.ndarray
    children: np.ndarray
    infogain: float
    discernibility: int = 0
    suppression: int = 0  # records suppressed after specializing it, minus today's
    valid: bool = True


@dataclass
class StepInfo:
    """Progress of one iteration, for progress bars and logs."""

    iteration: int
    attribute: str
    value: str
    score: float
    partitions: int
    candidates: int
    min_group_size: int


@dataclass
class LKCResult:
    """What the engine decided: the final cut and the sequence of specializations."""

    cut: dict[str, list[str]]
    specializations: list[dict[str, Any]]
    partitions: int
    extremes: GroupExtremes
    seconds_counting: float
    seconds_deciding: float
    records: int
    discernibility_ratio: float
    suppressed: int = 0
    suppression_budget: int = 0
    suppressed_partitions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    order: str = "free-first"  # how candidates were ranked under the budget


@dataclass
class _Stats:
    """Statistics of every partition ever created, kept as the blocks the source returned.

    One block per step (the partitions it created, which have consecutive indices), stored by
    reference and never written: copying each block into one growing array moved every
    statistic a second time (about 240 MB over 115,641 partitions at 1M rows) for nothing.
    Reads gather by ascending partition index, so the rows of one block form one run.
    """

    layout: StatsLayout
    blocks: list[np.ndarray] = field(default_factory=list)
    firsts: list[int] = field(default_factory=list)

    def store(self, first: int, block: np.ndarray) -> None:
        self.blocks.append(block)
        self.firsts.append(first)

    def take(self, rows: np.ndarray, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Slots ``lo:hi`` of partitions `rows` as a new (rows, slots, channels) array (any
        order is right; ascending order makes one run per block)."""
        hi = self.layout.slots if hi is None else hi
        out = np.empty((rows.size, hi - lo, self.layout.channels), dtype=np.int64)
        if rows.size == 0:
            return out
        if rows.min() >= self.firsts[-1]:  # the last step's partitions: the usual request
            out[:] = self.blocks[-1][rows - self.firsts[-1], lo:hi, :]
            return out
        block_of = np.searchsorted(np.asarray(self.firsts), rows, side="right") - 1
        begin = 0
        for end in run_ends(block_of):
            block = int(block_of[begin])
            local = rows[begin:end] - self.firsts[block]
            out[begin:end] = self.blocks[block][local, lo:hi, :]
            begin = end
        return out

    def own(self, rows: np.ndarray) -> np.ndarray:
        """(rows, channels): the partitions' own counts (slot 0)."""
        return self.take(rows, 0, 1)[:, 0, :]


class LKCEngine:
    """Runs top-down specialization against a :class:`CountSource`."""

    def __init__(
        self,
        schema: Schema,
        params: LKCParams,
        score: str = "infogain",
        on_step: Callable[[StepInfo], None] | None = None,
        suppress: Fraction = Fraction(0),
        order: str | None = None,
    ) -> None:
        """`suppress` is the share of records that may be suppressed (see
        :mod:`fedanon.algorithms.tds.suppression`); 0 keeps the plain LKC validity test.

        `order` ranks candidates under a budget (without one both orders are the plain score):
        "free-first" or "per-record"; by default "per-record" for the discernibility score and
        "free-first" for InfoGain (docs/lkc.md, "Record suppression")."""
        if score not in SCORES:
            raise FedanonError(f"unknown score '{score}' (choose from {', '.join(SCORES)})")
        if order is not None and order not in ORDERS:
            raise FedanonError(f"unknown order '{order}' (choose from {', '.join(ORDERS)})")
        if score == "infogain" and (schema.class_column is None or len(schema.class_values) < 1):
            raise FedanonError("score 'infogain' needs a class column (--class)")
        if suppress > 0 and min(params.L, len(schema.taxonomies)) < len(schema.taxonomies):
            raise FedanonError(
                "record suppression needs L >= the number of QIDs (k-anonymity, confidence "
                "bounding, (alpha,k)-anonymity, or --L at least |QID|)"
            )
        self.schema = schema
        self.params = params
        self.score = score
        self.suppress = Fraction(suppress)
        self.order = order or ("per-record" if score == "discernibility" else "free-first")
        self.budget = 0
        self.suppressed = 0
        self.on_step = on_step
        self.layout = StatsLayout.for_schema(schema)
        offsets = np.array(self.layout.offsets, dtype=np.int64)
        self._slot_ranges = (offsets, offsets + np.array(self.layout.widths, dtype=np.int64))
        self.taxonomies = schema.taxonomies
        self.validator = Validator(
            len(schema.taxonomies), params, self.layout.n_class, self.layout.n_sensitive
        )
        self.table = PartitionTable.for_schema(schema)
        self.stats = _Stats(self.layout)
        self.candidates: dict[tuple[int, int], Candidate] = {}
        self.cut: list[list[int]] = [[t.root] for t in schema.taxonomies]
        self.history: list[dict[str, Any]] = []
        # Candidates the budget dropped, each with the specializations done when it was: the
        # budget test is no anti-monotone one (a later step may suppress fewer records), so a
        # run resumed from a prefix (prefix.py) keeps dropped what the run before it dropped.
        self.dropped: dict[tuple[int, int], int] = {}
        self._counting = 0.0
        self._live: set[int] = set()  # attributes with a valid candidate (set by _best)
        self._retired: set[int] = set()  # attributes whose blocks the source stopped counting
        self._progress_min = 0  # smallest group so far, for StepInfo (progress display)

    # ----------------------------------------------------------------- helpers
    def _slots(self, attr: int, stats: np.ndarray) -> np.ndarray:
        """The children slots of `attr` within `stats` (partitions x slots x channels)."""
        off, width = self.layout.offsets[attr], self.layout.widths[attr]
        return stats[:, off : off + width, :]

    def _score(self, cand: Candidate) -> float:
        if self.score == "infogain":
            return cand.infogain
        # Under a budget the suppressed records are one group: charge its growth.
        grown = self.suppressed + cand.suppression
        return float(cand.discernibility - (grown * grown - self.suppressed * self.suppressed))

    def _per_record(self, cand: Candidate) -> float:
        """Order "per-record" under a budget: the score per square root of the records it
        splits, scaled by the share of the remaining budget the candidate leaves unspent.

        Dividing by sqrt(|T[x]|) stops one wide early split (most of n^2 at once) from closing
        the deep paths that a budget makes reachable; the budget factor (never 0 for a valid
        candidate) makes a candidate that spends much of what is left wait. A negative score is
        divided by the factor, so spending budget never makes a loss look smaller.
        """
        value = self._score(cand) / math.sqrt(max(1, int(cand.total[0])))
        unspent = 1 - max(cand.suppression, 0) / (self.budget - self.suppressed + 1)
        return value * unspent if value >= 0 else value / unspent

    def _class_counts(self, counts: np.ndarray) -> np.ndarray:
        return counts[..., 1 : 1 + self.layout.n_class]

    def _split_dynamic(self, attr: int, node: int, hist: np.ndarray, lo: int) -> list[DynamicSplit]:
        """Decide the binary split of a dynamic node from its atoms' class histogram."""
        tax = self.taxonomies[attr]
        rel = best_binary_split(hist[tax.atom_lo[node] - lo : tax.atom_hi[node] - lo])
        if rel is None:
            return []
        split = DynamicSplit(attr, node, tax.atom_lo[node] + rel)
        tax.split(node, split.first_right_atom)
        return [split]

    def _count(self, call: Callable[[], np.ndarray]) -> np.ndarray:
        began = time.perf_counter()
        try:
            return call()
        finally:
            self._counting += time.perf_counter() - began

    # ----------------------------------------------------------------- candidates
    def _add_candidates(
        self, attr: int, nodes: list[int], rows: np.ndarray, stats: np.ndarray
    ) -> None:
        """Create candidates for non-leaf `nodes` of `attr` from the partitions `rows` (whose
        statistics are `stats`)."""
        tax = self.taxonomies[attr]
        slots, own = self._slots(attr, stats), stats[:, 0, :]
        keys = self.table.keys[rows, attr]
        for node in nodes:
            if tax.is_leaf(node):
                continue
            mine = keys == node
            total = own[mine].sum(axis=0)
            children = slots[mine].sum(axis=0)[: len(tax.children[node])]
            gain = 0.0
            if self.score == "infogain":
                gain = info_gain(self._class_counts(total), self._class_counts(children))
            self.candidates[(attr, node)] = Candidate(attr, node, total, children, gain)

    def _update_candidates(self, rows: np.ndarray, stats: np.ndarray, signs: np.ndarray) -> None:
        """Add (`signs` +1) or remove (-1) what partitions `rows` (statistics `stats`) give
        to candidates' discernibility reductions and, under a budget, suppression deltas."""
        if rows.size == 0 or not (self.score == "discernibility" or self.suppress):
            return
        starts, ends = self._slot_ranges
        if self.suppress:
            lay = self.layout
            reduction, delta = suppression_measures(
                stats, starts, ends, self.params.K, self.params.C, 1 + lay.n_class, lay.n_sensitive
            )
            for attr, node, value in self._sums_by_candidate(rows, delta * signs[:, None]):
                cand = self.candidates.get((attr, node))
                if cand is not None:
                    cand.suppression += value
        else:
            reduction = discernibility_reductions(stats[:, 0, 0], stats[:, :, 0], starts, ends)
        if self.score != "discernibility":
            return
        for attr, node, value in self._sums_by_candidate(rows, reduction * signs[:, None]):
            cand = self.candidates.get((attr, node))
            if cand is not None:
                cand.discernibility += value

    def _sums_by_candidate(
        self, rows: np.ndarray, values: np.ndarray
    ) -> list[tuple[int, int, int]]:
        """(attr, node, sum of `values[:, attr]` over partitions `rows` at that node of attr).

        One bincount over (node, attribute) ids for every attribute at once: node ids are
        small, so no sorting, and one call instead of one per attribute on small batches.
        """
        width = len(self.taxonomies)
        ids = self.table.keys[rows].astype(np.int64) * width + np.arange(width)
        flat = ids.reshape(-1)
        sums = np.bincount(flat, weights=values.reshape(-1).astype(np.float64))
        present = np.flatnonzero(np.bincount(flat))
        return list(
            zip(
                (present % width).tolist(),
                (present // width).tolist(),
                sums[present].astype(np.int64).tolist(),
                strict=True,
            )
        )

    def _violating_live(self) -> np.ndarray:
        """Live partitions that violate K or C: the suppressed ones under a budget."""
        live = self.table.live_indices()
        lay = self.layout
        bad = violating(
            self.stats.own(live),
            self.params.K,
            self.params.C,
            1 + lay.n_class,
            lay.n_sensitive,
        )
        return live[bad]

    def _invalidate(
        self, attr: int, required: tuple[int, ...], rows: np.ndarray, stats: np.ndarray
    ) -> None:
        """Re-check the valid candidates of `attr` over partitions `rows` (statistics `stats`)
        and subsets ⊇ required."""
        valid_nodes = [n for (a, n), c in self.candidates.items() if a == attr and c.valid]
        if not valid_nodes:
            return
        keys = self.table.keys[rows]
        # A flag per node id of `attr` (ids are small): one gather instead of np.isin's sort.
        flag = np.zeros(self.taxonomies[attr].n_nodes, dtype=bool)
        flag[valid_nodes] = True
        mine = flag[keys[:, attr]]
        bad = self.validator.violating_nodes(
            keys[mine], self._slots(attr, stats)[mine], attr, required
        )
        for node in bad.tolist():
            self.candidates[(attr, node)].valid = False

    def _invalidate_after(self, attr: int | None, rows: np.ndarray, stats: np.ndarray) -> None:
        """Re-check candidates over the partitions `rows` (statistics `stats`) that a step
        on `attr` created (None: the initial partition): every attribute's candidates over the
        subsets that contain the attribute and `attr`.

        With the whole QID as the one subset, a candidate of attribute a fails exactly when
        one of its partitions has a non-empty child on a that fails K or C on its own: one pass
        over every slot of every attribute instead of one grouping per attribute.
        """
        if self.suppress or rows.size == 0:
            return  # the budget test in _best replaces the group-by-group test
        if not self.validator.whole_qid:
            for other in range(len(self.taxonomies)):
                required = (other,) if attr is None or other == attr else (other, attr)
                self._invalidate(other, required, rows, stats)
            return
        bad = self.validator.bad_children(stats).astype(np.int64)
        starts, ends = self._slot_ranges
        running = np.concatenate([np.zeros((bad.shape[0], 1), np.int64), bad.cumsum(axis=1)], 1)
        part, attrs = np.nonzero(running[:, ends] > running[:, starts])  # a bad child on attr
        nodes = self.table.keys[rows[part], attrs]
        for pair in set(zip(attrs.tolist(), nodes.tolist(), strict=True)):
            cand = self.candidates.get(pair)
            if cand is not None:
                cand.valid = False

    def _best(self) -> Candidate | None:
        best, best_key = None, None
        self._live = set()
        for (attr, node), cand in self.candidates.items():
            if cand.valid and self.suppress and self.suppressed + cand.suppression > self.budget:
                cand.valid = False  # dropped for good, like any invalid candidate
                self.dropped[(attr, node)] = len(self.history)
            if not cand.valid:
                continue
            self._live.add(attr)
            # InfoGain ignores what suppression costs, so under a budget it first performs what
            # suppresses nothing more (order "free-first"); order "per-record" ranks by the
            # budget-aware value of _per_record instead.
            free = cand.suppression <= 0
            if self.suppress and self.order == "per-record":
                key = (True, self._per_record(cand), -attr, -node)
            else:
                key = (free, self._score(cand), -attr, -node)
            if best_key is None or key > best_key:
                best, best_key = cand, key
        return best

    # ----------------------------------------------------------------- main loop
    def _check_feasible(self, root: np.ndarray) -> None:
        total = int(root[0])
        if total < self.params.K:
            raise InfeasibleError(
                f"infeasible: the table has {total} records, fewer than K={self.params.K}"
            )
        for j, s in enumerate(self.schema.sensitive):
            count = int(root[1 + self.layout.n_class + j])
            if count * self.params.C.denominator > self.params.C.numerator * total:
                raise InfeasibleError(
                    f"infeasible: sensitive value {s} makes up {count}/{total} = "
                    f"{count / total:.4f} of the table, above C={float(self.params.C)}"
                )

    def _start(self, source: CountSource) -> tuple[np.ndarray, np.ndarray]:
        """The initial partition: its statistics, counted by `source`; (rows, stats)."""
        splits: list[DynamicSplit] = []
        for attr, tax in enumerate(self.taxonomies):
            if tax.is_dynamic:
                hist = self._count(partial(source.atom_histogram, attr, 0))
                splits += self._split_dynamic(attr, tax.root, hist, 0)
        first = self.layout.unflatten(self._count(lambda: source.start(splits)), 1)
        self.stats.store(0, first)
        return np.array([0], dtype=np.int64), first

    def _resume(self, source: ResumableSource, prefix: Prefix) -> tuple[np.ndarray, np.ndarray]:
        """The state after `prefix` (its steps carry the counted data's nonempty masks): T_g
        and the cut follow the steps, `source.resume` counts the live partitions; (rows,
        stats). Rows of partitions no longer live are kept as zeros (never read)."""
        if any(tax.is_dynamic for tax in self.taxonomies):
            raise FedanonError("a run resumes from a prefix only with given taxonomies")
        for step in prefix.steps:
            self.table.specialize(self.schema, step)
            children = list(self.taxonomies[step.attr].children[step.node])
            self.cut[step.attr] = [n for n in self.cut[step.attr] if n != step.node] + children
        rows = self.table.live_indices()
        live = self.layout.unflatten(
            self._count(lambda: source.resume(prefix.steps)), int(rows.size)
        )
        block = np.zeros((self.table.size, self.layout.slots, self.layout.channels), np.int64)
        block[rows] = live
        self.stats.store(0, block)
        self.history = list(prefix.history)
        self.dropped = dict(prefix.dropped)
        return rows, live

    def run(self, source: CountSource, prefix: Prefix | None = None) -> LKCResult:
        """Specialize until no valid candidate is left; return the final cut and statistics.

        With a `prefix` (prefix.py), start from the cut its steps reach instead of the roots:
        every value of that cut is a candidate, checked over every live partition, as the
        roots are at the start (anti-monotonicity drops again what an uninterrupted run had
        dropped as invalid on the way; what a budget had dropped, the prefix names)."""
        began = time.perf_counter()
        if prefix is None:
            rows, first = self._start(source)
        else:
            rows, first = self._resume(cast(ResumableSource, source), prefix)
        root = first[:, 0, :].sum(axis=0)
        self._check_feasible(root)
        self.budget = budget_records(self.suppress, int(root[0]))
        self._progress_min = int(first[:, 0, 0].min())
        for attr in range(len(self.taxonomies)):
            self._add_candidates(attr, sorted(self.cut[attr]), rows, first)
        self._update_candidates(rows, first, np.ones(rows.size, dtype=np.int64))
        self._invalidate_after(None, rows, first)
        for key in self.dropped:
            if key in self.candidates:
                self.candidates[key].valid = False
        if self.suppress:
            self.suppressed = int(self.stats.own(self._violating_live())[:, 0].sum())

        iteration = len(self.history)
        while (best := self._best()) is not None:
            iteration += 1
            self._retire_dead(source)
            self._specialize(best, source)
            if self.on_step is not None:
                self.on_step(self._step_info(iteration, best))

        live = self.table.live_indices()
        suppressed_parts = self._violating_live() if self.suppress else live[:0]
        if self.suppress:
            live = np.setdiff1d(live, suppressed_parts)
        # Every group the run ever formed is a union of final groups, so the final groups hold
        # the smallest size and the highest confidence: one pass over the live partitions
        # (cheaper than one per step over each step's new partitions).
        extremes = self.validator.group_extremes(self.table.keys[live], self.stats.own(live))
        suppressed = int(self.stats.own(suppressed_parts)[:, 0].sum())
        if suppressed != self.suppressed or suppressed > self.budget:
            raise FedanonError("internal error: suppressed record count out of step")
        total = time.perf_counter() - began
        sizes = self.stats.own(live)[:, 0].astype(np.float64)
        records = int(root[0])
        return LKCResult(
            cut={
                t.attribute: [t.labels[n] for n in sorted(nodes)]
                for t, nodes in zip(self.taxonomies, self.cut, strict=True)
            },
            specializations=self.history,
            partitions=int(live.size),
            extremes=extremes,
            seconds_counting=self._counting,
            seconds_deciding=total - self._counting,
            records=records,
            # Suppressed records count as one group, as ARX counts them.
            discernibility_ratio=float((sizes * sizes).sum() + float(suppressed) ** 2)
            / float(records) ** 2,
            suppressed=suppressed,
            suppression_budget=self.budget,
            suppressed_partitions=suppressed_parts,
            order=self.order,
        )

    def _retire_dead(self, source: CountSource) -> None:
        """Drop the candidates of attributes that have no valid candidate left, and tell a
        source that offers ``retire`` (the in-process party) to stop counting their children
        blocks. An invalid candidate is dropped for good and only a specialized node adds
        candidates, so such an attribute is never specialized again: its candidates' counts
        choose nothing and its blocks are read by no later choice. A federation's source has
        no ``retire``: its vector layout is the protocol's."""
        dead = set(range(len(self.taxonomies))) - self._live - self._retired
        if not dead:
            return
        self._retired |= dead
        self.candidates = {key: c for key, c in self.candidates.items() if key[0] not in dead}
        retire = getattr(source, "retire", None)
        if retire is not None:
            retire(sorted(dead))

    def _step_info(self, iteration: int, best: Candidate) -> StepInfo:
        tax = self.taxonomies[best.attr]
        return StepInfo(
            iteration=iteration,
            attribute=tax.attribute,
            value=tax.labels[best.node],
            score=self._score(best),
            partitions=int(self.table.alive[: self.table.size].sum()),
            candidates=sum(1 for c in self.candidates.values() if c.valid),
            min_group_size=self._progress_min,
        )

    def _specialize(self, best: Candidate, source: CountSource) -> None:
        attr, node = best.attr, best.node
        tax = self.taxonomies[attr]
        children = list(tax.children[node])
        splits: list[DynamicSplit] = []
        if tax.is_dynamic:
            hist = self._count(lambda: source.atom_histogram(attr, node))
            for child in children:
                splits += self._split_dynamic(attr, child, hist, tax.atom_lo[node])
        link = self.table.link(attr, node)
        offset = self.layout.offsets[attr]
        expected = self.stats.take(link, offset, offset + len(children))
        nonempty = expected[:, :, 0] > 0
        step = Specialization(attr, node, nonempty, tuple(splits))
        applied = self.table.apply(step, children)
        block = self.layout.unflatten(self._count(lambda: source.specialize(step)), applied.n_new)
        if not np.array_equal(block[:, 0, :], expected[nonempty]):
            raise FedanonError(
                "count statistics are inconsistent across iterations (a party changed its data "
                "or the sums were corrupted)"
            )
        self.stats.store(applied.first_new, block)
        new_rows = np.arange(applied.first_new, applied.first_new + applied.n_new)
        if applied.n_new and self.on_step is not None:
            # Progress only: the groups this step changed are the only ones that can be
            # smaller than the smallest so far.
            changed = self.validator.group_extremes(
                self.table.keys[new_rows], block[:, 0, :], (attr,)
            )
            self._progress_min = min(self._progress_min, changed.min_size)

        self.history.append(
            {"attribute": tax.attribute, "value": tax.labels[node], "score": self._score(best)}
        )
        del self.candidates[(attr, node)]
        self.suppressed += best.suppression
        self.cut[attr] = [n for n in self.cut[attr] if n != node] + children
        self._add_candidates(attr, children, new_rows, block)
        if self.score == "discernibility" or self.suppress:
            # The partitions on Link_Best leave and their children enter, in one pass: what
            # the parents gave on `attr` went to Best, no longer a candidate, and no child
            # shares a parent's value on `attr`, so no new candidate takes a parent's share.
            rows = np.concatenate([link, new_rows])
            stats = np.concatenate([self.stats.take(link), block])
            signs = np.repeat(np.array([-1, 1], dtype=np.int64), [link.size, new_rows.size])
            self._update_candidates(rows, stats, signs)
        self._invalidate_after(attr, new_rows, block)
