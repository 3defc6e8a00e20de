"""Resuming top-down specialization from a prefix of an earlier run's history (issue #28).

An LKC rerun without a party that dropped out for good (leader/exclusion.py) need not redo
the rounds the first attempt completed: validity only gets easier as the cut gets coarser, so
the longest prefix of the first attempt's specializations whose cut is still LKC-valid on the
survivors' pooled data is a state the survivors' own run may start from. This module is the
shared core of that resume:

* :func:`replayed` - a count source's statistics of the live partitions after a list of
  specializations (the party replays the prefix locally; the centralized source the same).
* :func:`choose_prefix` - from the survivors' own counts at the first attempt's last cut, the
  longest valid prefix, and its specializations with the survivors' own nonempty masks: the
  first attempt's masks were computed over every party, so a child it created may be empty for
  the survivors, and a run among them would not have created it.

Why the masks can be derived: every partition of a cut c_m (m <= j) is the union of the
partitions of c_j below it, so the survivors' counts at c_j give their counts at every earlier
cut by summing up the creation tree. Nothing here needs a second look at the data.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from fedanon.algorithms.tds.layout import (
    AppliedSpecialization,
    PartitionTable,
    Specialization,
    StatsLayout,
)
from fedanon.algorithms.tds.suppression import budget_records, violating
from fedanon.algorithms.tds.validity import Validator
from fedanon.schema import LKCParams, Schema


class Replayable(Protocol):
    """What :func:`replayed` uses of a count source (LocalParty, a party's counting state)."""

    def start(self) -> np.ndarray: ...

    def specialize(self, step: Specialization) -> np.ndarray: ...


@dataclass
class Prefix:
    """A start state for the engine: the specializations to apply first (with the nonempty
    masks of the data the run counts) and their entries of the report's history."""

    steps: list[Specialization] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    # (attr, node) -> the specializations done when a suppression budget dropped it, for
    # the candidates dropped before the prefix's last cut (the engine's ``dropped``)
    dropped: dict[tuple[int, int], int] = field(default_factory=dict)

    def first(self, count: int) -> Prefix:
        """The prefix of the first `count` steps, with the drops made before its last cut."""
        return Prefix(
            self.steps[:count],
            self.history[:count],
            {key: at for key, at in self.dropped.items() if at < count},
        )


def apply_all(
    schema: Schema, steps: Sequence[Specialization]
) -> tuple[PartitionTable, list[AppliedSpecialization]]:
    """T_g after `steps` from the roots, and what each step changed."""
    table = PartitionTable.for_schema(schema)
    return table, [table.specialize(schema, step) for step in steps]


def replayed(
    source: Replayable, schema: Schema, steps: Iterable[Specialization]
) -> tuple[PartitionTable, np.ndarray]:
    """Start `source` and apply `steps` (each taken when the steps before it are applied);
    T_g and the statistics (partitions x slots x channels) of its live partitions, in
    partition order.

    A partition's statistics row (its own counts and its children's on every attribute) does
    not change while it lives, so the row the step that created it returned is its row now."""
    layout = StatsLayout.for_schema(schema)
    table = PartitionTable.for_schema(schema)
    blocks = [layout.unflatten(source.start(), 1)]
    firsts = [0]
    for step in steps:
        applied = table.specialize(schema, step)
        blocks.append(layout.unflatten(source.specialize(step), applied.n_new))
        firsts.append(applied.first_new)
    live = table.live_indices()
    block_of = np.searchsorted(np.asarray(firsts), live, side="right") - 1
    out = np.empty((live.size, layout.slots, layout.channels), dtype=np.int64)
    for i, (row, block) in enumerate(zip(live.tolist(), block_of.tolist(), strict=True)):
        out[i] = blocks[block][row - firsts[block]]
    return table, out


def _counts_below(
    table: PartitionTable, applied: Sequence[AppliedSpecialization], live_own: np.ndarray
) -> np.ndarray:
    """Own counts (partitions x channels) of every partition ever created, from those of the
    live ones: each dead partition holds exactly the records of its children."""
    counts = np.zeros((table.size, live_own.shape[1]), dtype=np.int64)
    counts[table.live_indices()] = live_own
    for step in reversed(applied):
        children = np.where(step.new_index >= 0, step.new_index, table.size)
        padded = np.concatenate([counts, np.zeros((1, counts.shape[1]), np.int64)])
        counts[step.link] = padded[children].sum(axis=1)
    return counts


def _cut_valid(
    schema: Schema,
    params: LKCParams,
    suppress: Fraction,
    keys: np.ndarray,
    own: np.ndarray,
) -> bool:
    """Whether the non-empty groups `keys` with own counts `own` satisfy LKC-privacy (every
    group over every QID subset of size min(L, |QID|): size >= K, sensitive share <= C); with
    a suppression budget, whether the records of the violating groups fit in it."""
    layout = StatsLayout.for_schema(schema)
    sens_from = 1 + layout.n_class
    if suppress:
        bad = violating(own, params.K, params.C, sens_from, layout.n_sensitive)
        return int(own[bad, 0].sum()) <= budget_records(suppress, int(own[:, 0].sum()))
    validator = Validator(len(schema.taxonomies), params, layout.n_class, layout.n_sensitive)
    extremes = validator.group_extremes(keys, own)
    # A share above C exceeds it by at least 1 / (group size x C's denominator), far above
    # the floats' rounding at any table size here; a share of exactly C rounds as C does
    # and passes.
    return extremes.min_size >= params.K and all(
        conf <= float(params.C) for conf in extremes.max_confidence
    )


def choose_prefix(
    schema: Schema,
    params: LKCParams,
    suppress: Fraction,
    earlier: Prefix,
    live_own: np.ndarray,
) -> Prefix:
    """The longest prefix of `earlier` (an earlier run's specializations, with that run's
    nonempty masks) whose cut is LKC-valid on the data whose own counts at the end of its
    steps are `live_own` (live partitions x channels, partition order), with this data's
    masks.

    Validity is monotone in the prefix (a coarser cut's groups are unions of a finer one's,
    and a union of groups of at least K records with shares at most C is one too), so a
    binary search finds it; the root (the empty prefix) is the fallback, which the engine's
    own feasibility check then judges. Under a suppression budget the test is not monotone (a
    coarser group can exceed C where all but one of its finer parts do not, and then
    suppresses them all): the search then finds a valid prefix, not always the longest."""
    steps = earlier.steps
    table, applied = apply_all(schema, steps)
    counts = _counts_below(table, applied, live_own)

    def valid(m: int) -> bool:
        cut, _ = apply_all(schema, steps[:m])
        live = cut.live_indices()
        own = counts[live]
        present = own[:, 0] > 0
        return _cut_valid(schema, params, suppress, cut.keys[live][present], own[present])

    lo, hi = 0, len(steps)  # the answer lies in [lo, hi]; prefix lo is taken as valid
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if valid(mid):
            lo = mid
        else:
            hi = mid - 1
    chosen = earlier.first(lo)
    chosen.steps = _own_masks(applied[:lo], steps[:lo], counts)
    return chosen


def _own_masks(
    applied: Sequence[AppliedSpecialization],
    steps: Sequence[Specialization],
    counts: np.ndarray,
) -> list[Specialization]:
    """`steps` with the nonempty masks of the data whose counts per partition are `counts`:
    the partitions empty for it are never created, and the others keep their order (T_g
    appends children in link order), so its link at each step is the earlier run's link
    less the empty partitions."""
    out = []
    for step, done in zip(steps, applied, strict=True):
        here = counts[done.link, 0] > 0
        children = done.new_index[here]
        nonempty = (children >= 0) & (counts[np.maximum(children, 0), 0] > 0)
        out.append(Specialization(step.attr, step.node, nonempty, step.splits))
    return out
