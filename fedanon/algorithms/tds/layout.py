"""The shared generalized table T_g and the canonical layout of count statistics.

Top-down specialization in the distributed setting (paper, section 5) needs every party and the
leader to hold the same copy of the current cut and of the generalized table T_g, so that count
vectors computed independently by each party line up element by element and can be summed
securely. This module is that shared state:

* :class:`PartitionTable` - the global list of generalized records (one per non-empty full-QID
  group of the current cut), as node ids per QID. Partitions are never renumbered: specializing
  *Best* marks the partitions on Link_Best dead and appends their non-empty children at the end,
  in one deterministic order. Every side applies the same :class:`Specialization` and so holds
  an identical table.
* :class:`StatsLayout` - how the statistics of a batch of new partitions are flattened into one
  uint64 vector: per partition a row of slots; slot 0 is the partition itself, then for each QID
  attribute ``width`` slots for the children of the partition's value on that attribute (the
  hypothetical counts needed to score and validate candidates). Each slot holds ``channels``
  numbers: record count, count per class value, count per sensitive value.

The set of non-empty groups at the current cut is coarser than the final release (the cut only
ever gets finer), so sharing it with the parties reveals nothing the release does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fedanon.schema import Schema


def run_ends(ids: np.ndarray) -> list[int]:
    """End (exclusive) of each run of equal consecutive values in `ids` (non-empty).

    Partition statistics are kept in blocks of consecutive indices, so an ascending request
    reads one run per block (``np.r_`` here cost more than the reads on small requests).
    """
    return [*(np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist(), int(ids.size)]


@dataclass(frozen=True)
class StatsLayout:
    """Shape of the statistics rows: slots per partition and channels per slot."""

    n_class: int
    n_sensitive: int
    widths: tuple[int, ...]

    @classmethod
    def for_schema(cls, schema: Schema) -> StatsLayout:
        return cls(
            n_class=len(schema.class_values),
            n_sensitive=len(schema.sensitive),
            widths=tuple(t.max_children for t in schema.taxonomies),
        )

    @property
    def channels(self) -> int:
        return 1 + self.n_class + self.n_sensitive

    @property
    def slots(self) -> int:
        return 1 + sum(self.widths)

    @cached_property
    def offsets(self) -> tuple[int, ...]:
        """First slot of each attribute's children block."""
        out, at = [], 1
        for w in self.widths:
            out.append(at)
            at += w
        return tuple(out)

    def vector_length(self, n_partitions: int) -> int:
        return n_partitions * self.slots * self.channels

    def unflatten(self, vector: np.ndarray, n_partitions: int) -> np.ndarray:
        """View a flat statistics vector as (partitions, slots, channels) int64 counts."""
        expected = self.vector_length(n_partitions)
        if vector.size != expected:
            raise ValueError(f"statistics vector has {vector.size} elements, expected {expected}")
        # Counts below 2^63 read the same as uint64 or int64: reinterpret instead of copying.
        counts = vector.view(np.int64) if vector.dtype == np.uint64 else vector.astype(np.int64)
        return counts.reshape(n_partitions, self.slots, self.channels)

    def possible(self, keys: np.ndarray, children: Sequence[np.ndarray]) -> np.ndarray:
        """Which entries of the flat statistics vector of the partitions `keys` (one row of
        node ids per QID each) can be non-zero, as a boolean mask: every partition's own slot
        and, on each attribute, as many child slots as its value there has children
        (`children`: per attribute, the child count of every node; see :func:`child_counts`).
        The rest of each attribute's ``width`` slots is zero in every party's vector.

        Why: a party and the leader hold the same T_g, so both know this mask without sending
        it, and the secure sum carries only these entries (:func:`carried`). At a million
        records a wide taxonomy left about 85 % of every vector structurally zero, all of it
        masked, summed and relayed hop by hop."""
        slots = np.zeros((keys.shape[0], self.slots), dtype=bool)
        slots[:, 0] = True
        for attr, (first, width) in enumerate(zip(self.offsets, self.widths, strict=True)):
            counts = children[attr][keys[:, attr]]
            slots[:, first : first + width] = np.arange(width) < counts[:, None]
        return np.repeat(slots, self.channels, axis=1).reshape(-1)


def child_counts(schema: Schema) -> list[np.ndarray]:
    """Per QID, how many children every node of its taxonomy has (a leaf: none)."""
    return [
        np.fromiter((len(c) for c in t.children), dtype=np.int64, count=t.n_nodes)
        for t in schema.taxonomies
    ]


def carried(layout: StatsLayout, schema: Schema, keys: np.ndarray) -> np.ndarray:
    """The mask of the entries the secure sum carries for the partitions `keys` (their
    :meth:`StatsLayout.possible` entries, in layout order): a party sends ``stats[mask]``, the
    leader puts the summed entries back at ``mask`` and zeros elsewhere (:func:`restored`)."""
    return layout.possible(keys, child_counts(schema))


def restored(total: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The full flat statistics whose `mask` entries are `total` (a summed carried vector) and
    whose other entries are zero."""
    if total.size != int(np.count_nonzero(mask)):
        raise ValueError(f"carried vector has {total.size} elements, the mask {mask.sum()}")
    full = np.zeros(mask.size, dtype=np.uint64)
    full[mask] = total
    return full


@dataclass(frozen=True)
class DynamicSplit:
    """A split of a dynamic numerical node, decided by the leader before the node enters the cut."""

    attr: int
    node: int
    first_right_atom: int


@dataclass(frozen=True)
class Specialization:
    """One instruction: specialize `node` of QID `attr`; `nonempty` says which children exist.

    ``nonempty`` has one row per partition on Link_node (in partition-index order) and one column
    per child (taxonomy order). ``splits`` carries decisions for dynamic numerical children.
    """

    attr: int
    node: int
    nonempty: np.ndarray
    splits: tuple[DynamicSplit, ...] = ()


@dataclass
class AppliedSpecialization:
    """What applying a specialization changed in a :class:`PartitionTable`."""

    link: np.ndarray  # old partition indices on Link_node, ascending
    new_index: np.ndarray  # (len(link), n_children) -> new partition index or -1 if empty
    first_new: int
    n_new: int


@dataclass
class PartitionTable:
    """The generalized table T_g: node ids per QID for every partition ever created."""

    n_qids: int
    keys: np.ndarray = field(init=False)
    alive: np.ndarray = field(init=False)
    size: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.keys = np.zeros((16, self.n_qids), dtype=np.int32)
        self.alive = np.zeros(16, dtype=bool)

    @classmethod
    def with_roots(cls, roots: list[int]) -> PartitionTable:
        """The initial table: one partition holding every record at the taxonomy roots."""
        table = cls(n_qids=len(roots))
        table._append(np.asarray(roots, dtype=np.int32)[None, :])
        return table

    @classmethod
    def for_schema(cls, schema: Schema) -> PartitionTable:
        """The initial table of `schema`: every record at its taxonomies' roots."""
        return cls.with_roots([t.root for t in schema.taxonomies])

    def _append(self, rows: np.ndarray) -> None:
        need = self.size + rows.shape[0]
        if need > self.keys.shape[0]:
            cap = max(need, 2 * self.keys.shape[0])
            keys = np.zeros((cap, self.n_qids), dtype=np.int32)
            keys[: self.size] = self.keys[: self.size]
            alive = np.zeros(cap, dtype=bool)
            alive[: self.size] = self.alive[: self.size]
            self.keys, self.alive = keys, alive
        self.keys[self.size : need] = rows
        self.alive[self.size : need] = True
        self.size = need

    def link(self, attr: int, node: int) -> np.ndarray:
        """Indices of live partitions whose value on `attr` is `node` (Link_node)."""
        live = self.alive[: self.size]
        return np.flatnonzero(live & (self.keys[: self.size, attr] == node))

    def live_indices(self) -> np.ndarray:
        return np.flatnonzero(self.alive[: self.size])

    def specialize(self, schema: Schema, step: Specialization) -> AppliedSpecialization:
        """Apply `step` with its node's children in `schema`'s taxonomy: what every holder of
        a copy of T_g does with a step (the engine, a party, the leader's masks, a replay)."""
        return self.apply(step, list(schema.taxonomies[step.attr].children[step.node]))

    def apply(self, step: Specialization, children: list[int]) -> AppliedSpecialization:
        """Replace the partitions on Link_node by their non-empty children, appended in order."""
        link = self.link(step.attr, step.node)
        mask = np.asarray(step.nonempty, dtype=bool).reshape(len(link), len(children))
        rows_idx, child_idx = np.nonzero(mask)
        new_keys = self.keys[link[rows_idx]].copy()
        new_keys[:, step.attr] = np.asarray(children, dtype=np.int32)[child_idx]
        first_new = self.size
        new_index = np.full(mask.shape, -1, dtype=np.int64)
        new_index[rows_idx, child_idx] = first_new + np.arange(rows_idx.size)
        self.alive[link] = False
        self._append(new_keys)
        return AppliedSpecialization(
            link=link, new_index=new_index, first_new=first_new, n_new=int(rows_idx.size)
        )


class CarriedMasks:
    """The :func:`carried` mask of every secure sum of one run, for the side that holds no
    counting party (the leader): a copy of T_g that follows the run's steps."""

    def __init__(self, layout: StatsLayout, schema: Schema) -> None:
        self.layout = layout
        self.schema = schema
        self.table = PartitionTable.for_schema(schema)

    def start(self) -> np.ndarray:
        """The mask of the start's vector (the one partition at the roots)."""
        return carried(self.layout, self.schema, self.table.keys[:1])

    def specialize(self, step: Specialization) -> np.ndarray:
        """Apply `step` to the copy of T_g; the mask of the partitions it creates."""
        applied = self.table.specialize(self.schema, step)
        new = self.table.keys[applied.first_new : applied.first_new + applied.n_new]
        return carried(self.layout, self.schema, new)

    def resume(self, steps: Sequence[Specialization]) -> np.ndarray:
        """Apply `steps` (a prefix a run resumes from) to the fresh copy of T_g; the mask of
        the live partitions' statistics, which the adoption's sum carries."""
        for step in steps:
            self.table.specialize(self.schema, step)
        return carried(self.layout, self.schema, self.table.keys[self.table.live_indices()])
