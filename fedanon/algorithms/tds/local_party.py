"""A party's private records and its copy of T_g: the engine's in-process count source.

The party daemon of the distributed mode wraps exactly this class, so centralized and distributed
anonymization count with one implementation. All work is vectorized over records: each QID is
encoded once as atom codes; a record's generalized value is the key of its partition; applying a
specialization moves only the records of the partitions on Link_Best.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from fedanon.algorithms.tds.engines.coded import CodedColumn, CodedTable
from fedanon.algorithms.tds.engines.records import (
    RELEASE_BATCH_RECORDS,
    CodedRelease,
    Encode,
    ReleasedRows,
    TextColumn,
    narrow,
)
from fedanon.algorithms.tds.engines.shard_stats import SparseBlock
from fedanon.algorithms.tds.layout import (
    AppliedSpecialization,
    DynamicSplit,
    PartitionTable,
    Specialization,
    StatsLayout,
    run_ends,
)
from fedanon.algorithms.tds.prefix import replayed
from fedanon.allocator import tune_for_rows
from fedanon.errors import FedanonError
from fedanon.schema import Schema
from fedanon.tables import Table, arrow_of, column_names, keep_rows, strings_of
from fedanon.text import Column, equals_text, factorize, lookup_codes, text_at, text_codes

if TYPE_CHECKING:
    from fedanon.readers.sources import Shard

# Up to this many records a step finds its records as a slice of the records ordered by atom
# (_records_under): the per-record arrays sit in the processor's cache, so gathering them in
# atom order costs what gathering them in record order does, and no pass over every record is
# made. Beyond it the slice's scattered gathers and writes cost more than that pass (300,000
# records, ARX's job at k = 10: 253 against 198 ms of counting), so the pass finds them.
_SLICED_RECORDS = 1 << 17


class LocalParty:
    """Counts over one party's records in the canonical layout; applies instructions."""

    def __init__(self, schema: Schema, table: Table) -> None:
        """`table` is a DataFrame or an Arrow table (fedanon.tables); the release is of the
        same kind (:meth:`generalized_table`)."""
        self.table = table
        self._encode(schema, lambda name: table[name], column_names(table), len(table))
        self.sparse_parents = False
        self._start_run()

    @classmethod
    def from_shard(cls, schema: Schema, shard: Shard, columns: list[str]) -> LocalParty:
        """One shard of a party's records (the Dask engine), released as `columns`, held as
        integer codes only: the shard is read one column at a time, each QID kept as its
        atoms, every other released column as codes over its distinct values
        (:mod:`fedanon.algorithms.tds.engines.coded`), no text nor Python object per row. Its
        partitions' statistics are kept sparse
        (:mod:`fedanon.algorithms.tds.engines.shard_stats`): each shard would otherwise hold
        the statistics of every partition, most of them zeros. docs/engines.md, "Memory"."""
        party = cls.__new__(cls)
        index = shard.index
        party._encode(schema, shard.column, columns, len(index))
        qids = {tax.attribute for tax in schema.taxonomies}
        released = {
            name: CodedColumn.of(shard.column(name)) for name in columns if name not in qids
        }
        party.table = CodedTable(released, index)
        party.sparse_parents = True
        party._start_run()
        return party

    def _encode(
        self, schema: Schema, column: Callable[[str], Column], names: list[str], rows: int
    ) -> None:
        """The records as the counting needs them: atoms per QID, class, sensitive flags and
        profile, each in the narrowest integer type (an array per column: no table held)."""
        tune_for_rows(rows)  # each step frees and re-allocates arrays of the table's length
        self.schema = schema
        self.columns = list(names)  # the release's, in order
        self.layout = StatsLayout.for_schema(schema)
        self.atoms = [
            narrow(tax.encode(column(tax.attribute)), tax.n_atoms) for tax in schema.taxonomies
        ]
        self.classes = self._encode_class(column, names)
        self.sensitive = self._encode_sensitive(column, names, rows)
        self._profile, self._profile_channels = self._profiles(rows)
        # the initial partition's statistics, shared with restarted copies (see start)
        self._first_stats: np.ndarray | None = None
        # per QID: the records ordered by atom and where each atom's run begins, built when
        # the QID is first specialized (see _records_under); shared with restarted copies
        self._by_atom: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def restarted(self, schema: Schema) -> LocalParty:
        """This party's records, ready for another run under `schema` (a deep copy of this
        party's schema, as a second search order needs): the encoding, most of the cost of
        building a party, is shared; the run's state starts afresh."""
        party = copy.copy(self)
        party.schema = schema
        party.layout = StatsLayout.for_schema(schema)
        party._start_run()
        return party

    def _start_run(self) -> None:
        """The state a run changes: every record in the all-root partition, nothing counted."""
        schema = self.schema
        self.partitions = PartitionTable.for_schema(schema)
        self.record_partition = np.zeros(len(self.table), dtype=np.int32)  # half the bytes
        widest = max((t.max_children for t in schema.taxonomies), default=0)
        self._slot_dtype: type[np.integer] = (
            np.uint8 if widest < (1 << 8) else np.int16 if widest < (1 << 15) else np.int64
        )
        # attr -> (node count, slot table, which nodes have children), see _slot_table
        self._slot_tables: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}
        self._slot: list[np.ndarray] = []  # per QID: each record's child position + 1, 0 at a leaf
        # own statistics of each step's new partitions (sparse in a shard)
        self._blocks: list[np.ndarray | SparseBlock] = []
        self._block_live: list[int] = []  # live partitions per block
        self._block_first: list[int] = []  # index of each block's first partition
        self._block_of = np.zeros(16, dtype=np.int64)  # partition index -> block
        self._steps = 0  # start and specializations applied: what the release depends on
        self._retired_slots: np.ndarray | None = None  # children slots left uncounted, see retire
        self._released: tuple[tuple[object, ...], CodedRelease] | None = None

    # ----------------------------------------------------------------- encoding
    def _encode_class(self, column: Callable[[str], Column], names: list[str]) -> np.ndarray | None:
        name, values = self.schema.class_column, self.schema.class_values
        if name is None:
            return None
        if name not in names:
            raise FedanonError(f"class column '{name}' is missing from the table")
        cells = column(name)
        out, row = lookup_codes(cells, {v: i for i, v in enumerate(values)})
        if row is not None:
            raise FedanonError(
                f"class column '{name}': value '{text_at(cells, row)}' (first at "
                f"row {row + 1}) is not one of the class values {values}"
            )
        return narrow(out, len(values))

    def _encode_sensitive(
        self, column: Callable[[str], Column], names: list[str], rows: int
    ) -> np.ndarray:
        out = np.zeros((len(self.schema.sensitive), rows), dtype=bool)
        for j, s in enumerate(self.schema.sensitive):
            if s.column not in names:
                raise FedanonError(f"sensitive column '{s.column}' is missing from the table")
            out[j] = equals_text(column(s.column), s.value)
        return out

    # ----------------------------------------------------------------- counting
    def _profiles(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Each record's *profile* (class and sensitive flags, densely numbered) and the channel
        counts one record of each profile adds.

        One bincount over profiles and a small matrix product replace one bincount per channel.
        """
        lay = self.layout
        classes = self.classes if self.classes is not None and lay.n_class else None
        if classes is None and lay.n_sensitive == 0:  # one profile: every record counts 1
            channels = np.zeros((1, lay.channels), dtype=np.int64)
            channels[0, 0] = 1
            return np.zeros(n, dtype=np.uint8), channels
        code = np.zeros(n, np.int64) if classes is None else classes.astype(np.int64)
        for j in range(lay.n_sensitive):
            code = code * 2 + self.sensitive[j]
            if j % 32 == 31:  # keep the combined code small: re-number densely
                code = factorize(code)[0]
        _, first, profile = np.unique(code, return_index=True, return_inverse=True)
        channels = np.zeros((first.size, lay.channels), dtype=np.int64)
        channels[:, 0] = 1
        if classes is not None:
            channels[np.arange(first.size), 1 + classes[first].astype(np.int64)] = 1
        for j in range(lay.n_sensitive):
            channels[:, 1 + lay.n_class + j] = self.sensitive[j, first]
        # the narrowest codes: the fewer bytes each step gathers
        return narrow(profile.reshape(-1), first.size), channels

    def _slot_table(self, attr: int) -> np.ndarray:
        """``table[depth + 1, atom]`` = 1 + child position, below a node at `depth`, of the
        child holding the atom; 0 where the atom's deepest node is at `depth` (a leaf). Kept
        one above the position so that a count key is ``slot * stride + cell`` with no shift.

        One gather per record instead of three (ancestor, rank, leaf test) on every step.
        Rebuilt when a dynamic tree grows (its node count changes).
        """
        return self._tree_tables(attr)[1]

    def _inner_nodes(self, attr: int) -> np.ndarray:
        """Per node of `attr`'s taxonomy: whether it has children (is not a leaf)."""
        return self._tree_tables(attr)[2]

    def _tree_tables(self, attr: int) -> tuple[int, np.ndarray, np.ndarray]:
        tax = self.schema.taxonomies[attr]
        cached = self._slot_tables.get(attr)
        if cached is None or cached[0] != tax.n_nodes:
            ancestors = tax.ancestor_table()
            ranks = np.where(ancestors >= 0, tax.child_rank()[ancestors] + 1, 0)
            inner = np.array([bool(kids) for kids in tax.children], dtype=bool)
            table = np.ascontiguousarray(ranks.T, dtype=self._slot_dtype)
            cached = (tax.n_nodes, table, inner)
            self._slot_tables[attr] = cached
        return cached

    def _slots_at(self, attr: int, node_depth: int, rows: np.ndarray) -> np.ndarray:
        """1 + child position of records `rows`, whose cut nodes on `attr` all lie at depth
        `node_depth` (the roots at the start; Best's children after a step); 0 at a leaf."""
        return self._slot_table(attr)[node_depth + 1][self.atoms[attr][rows]]

    def _records_under(self, attr: int, node: int) -> np.ndarray:
        """The records whose value on `attr` lies under `node`: a node covers a contiguous run
        of atoms, so they are one slice of the records ordered by atom (sorted once per QID),
        where finding a step's records by their partitions took a pass over every record on
        every step. Within one atom the records keep their order."""
        cached = self._by_atom.get(attr)
        if cached is None:
            atoms = self.atoms[attr]
            order = np.argsort(atoms, kind="stable").astype(np.int32)
            runs = np.bincount(atoms, minlength=self.schema.taxonomies[attr].n_atoms)
            cached = (order, np.concatenate([[0], np.cumsum(runs)]))
            self._by_atom[attr] = cached
        order, begins = cached
        tax = self.schema.taxonomies[attr]
        return order[begins[tax.atom_lo[node]] : begins[tax.atom_hi[node]]]

    def _histogram(
        self, cell: np.ndarray, slot: np.ndarray, n_parts: int, width: int
    ) -> np.ndarray:
        """(width + 1, n_parts, P) record counts by child slot (first row: at a leaf), partition
        and profile. `cell` = partition * P + profile per record, the same for every attribute
        (computed once per step); `slot` = 1 + the record's child position, 0 at a leaf."""
        stride = n_parts * self._profile_channels.shape[0]
        key = np.multiply(slot, np.int64(stride), dtype=np.int64)
        key += cell
        hist = np.bincount(key, minlength=(width + 1) * stride)
        return hist.reshape(width + 1, n_parts, -1)

    def _count_blocks(
        self,
        cell: np.ndarray,
        rows: np.ndarray | slice,
        nodes: np.ndarray,
        attrs: Sequence[int],
        out: np.ndarray,
    ) -> None:
        """Fill `out` (partitions, slots, channels) with the children blocks of `attrs` counted
        from records `rows` (cells `cell`: partition * P + profile, partitions relative) of the
        partitions whose node ids are `nodes` (partitions x QIDs)."""
        n_parts = nodes.shape[0]
        for a in attrs:
            width, offset = self.layout.widths[a], self.layout.offsets[a]
            if width == 0 or not self._inner_nodes(a)[nodes[:, a]].any():
                continue  # every partition is at a leaf of `a`: its children block stays zero
            hist = self._histogram(cell, self._slot[a][rows], n_parts, width)
            out[:, offset : offset + width, :] = (hist[1:] @ self._profile_channels).swapaxes(0, 1)

    def _own_counts(self, cell: np.ndarray, n_parts: int) -> np.ndarray:
        """(n_parts, channels) counts of records by cell (partition * P + profile)."""
        hist = np.bincount(cell, minlength=n_parts * self._profile_channels.shape[0])
        return hist.reshape(n_parts, -1) @ self._profile_channels

    def _remember(self, first: int, stats: np.ndarray) -> None:
        """Keep this party's own statistics of new partitions (the parents of later splits).

        Blocks are kept as returned, one per step, and dropped once none of their partitions is
        live: no copy into one growing array, and memory bounded by the live partitions' blocks.
        """
        block = len(self._blocks)
        self._blocks.append(SparseBlock.of(stats) if self.sparse_parents else stats)
        self._block_live.append(stats.shape[0])
        self._block_first.append(first)
        need = first + stats.shape[0]
        if need > self._block_of.size:
            cap = max(need, 2 * self._block_of.size)
            self._block_of = np.resize(self._block_of, cap)
        self._block_of[first:need] = block

    def _parents(self, link: np.ndarray) -> np.ndarray:
        """This party's statistics of the partitions `link` (live until now), then forget them."""
        out = np.empty((link.size, self.layout.slots, self.layout.channels), dtype=np.int64)
        self._forget(link, out)
        return out

    def _forget(self, link: np.ndarray, out: np.ndarray | None = None) -> None:
        """Forget the statistics of the partitions `link` (live until now), gathered into `out`
        first when given (a step with every other block retired needs none of them).

        `link` is ascending and blocks cover ascending index ranges, so the partitions of each
        block form one run of `link`: one contiguous ``take`` per block, no boolean masks.
        """
        blocks = self._block_of[link]
        begin = 0
        for end in run_ends(blocks) if link.size else ():
            block = int(blocks[begin])
            local = link[begin:end] - self._block_first[block]
            kept = self._blocks[block]
            if local[0] < 0 or local[-1] >= kept.shape[0]:
                raise FedanonError("internal error: a partition's statistics were forgotten")
            if out is not None:  # gather before forgetting
                if isinstance(kept, SparseBlock):
                    kept.take(local, out[begin:end])
                else:
                    # Ascending, so the two ends bound every index: "clip" never clips here,
                    # and unlike the default "raise" it writes into `out` directly (no
                    # buffered copy, ~4x faster).
                    np.take(kept, local, axis=0, out=out[begin:end], mode="clip")
            self._block_live[block] -= end - begin
            if self._block_live[block] == 0:
                self._blocks[block] = np.empty((0, *kept.shape[1:]), dtype=np.int64)
            begin = end

    # ----------------------------------------------------------------- protocol steps
    def atom_histogram(self, attr: int, node: int) -> np.ndarray:
        """Class counts per atom under `node` (for choosing a dynamic numerical split)."""
        tax = self.schema.taxonomies[attr]
        lo, hi = tax.atom_lo[node], tax.atom_hi[node]
        atoms = self.atoms[attr]
        rows = np.flatnonzero((atoms >= lo) & (atoms < hi))
        n_class = max(1, self.layout.n_class)
        cls = self.classes[rows] if self.classes is not None else np.zeros(rows.size, np.int64)
        key = (atoms[rows].astype(np.int64) - lo) * n_class + cls
        hist = np.bincount(key, minlength=(hi - lo) * n_class)
        return hist.reshape(hi - lo, n_class)

    def start(self, splits: Sequence[DynamicSplit] = ()) -> np.ndarray:
        """Statistics of the single initial partition (every record at the roots)."""
        apply_splits(self.schema, splits)
        self._steps += 1
        everyone = slice(None)  # every record: views of the arrays, no gather by an index
        self._slot = [
            self._slot_table(a)[tax.depth[tax.root] + 1][self.atoms[a]]
            for a, tax in enumerate(self.schema.taxonomies)
        ]
        # Without dynamic trees every run starts from the same counts: a restarted party
        # (another search order, `restarted`) reuses them instead of counting every record.
        fixed = not any(tax.is_dynamic for tax in self.schema.taxonomies)
        retired = self._retired_slots
        if fixed and self._first_stats is not None:
            out = self._first_stats.copy()
            if retired is not None:  # retired blocks stay zero, as a step leaves them
                out[:, retired, :] = 0
        else:
            out = np.zeros((1, self.layout.slots, self.layout.channels), dtype=np.int64)
            out[:, 0, :] = self._own_counts(self._profile, 1)
            roots = self.partitions.keys[:1]
            self._count_blocks(self._profile, everyone, roots, self._counted_attrs(), out)
            if fixed and retired is None:  # only the whole statistics serve another run
                self._first_stats = out.copy()
        self._remember(0, out)
        return _frozen_vector(out)

    def resume(self, steps: Sequence[Specialization]) -> np.ndarray:
        """Start and apply `steps` (a prefix the engine resumes from: prefix.py); the flat
        statistics of the live partitions after them, in partition order."""
        _, live = replayed(self, self.schema, steps)
        return _frozen_vector(live)

    def retire(self, attrs: Sequence[int]) -> None:
        """Count no more children blocks of `attrs`: the engine reads none of them again (none
        of their candidates is valid, and an invalid candidate is dropped for good, so such an
        attribute is never specialized again and its blocks choose nothing). Later steps leave
        those blocks zero. On Adult's ARX job at k = 10 one attribute stays live after the
        second of 32 steps, so the other seven would be counted for nothing. Only the
        centralized engine calls this: a federation's parties count every block, as the
        protocol's vector layout says (docs/lkc.md, "Retired attributes")."""
        self._uncount(attrs)
        # never specialized again: their records' order by atom goes (4 bytes a record)
        self._by_atom = {q: v for q, v in self._by_atom.items() if q not in attrs}

    def count_own_only(self) -> None:
        """From now on count only what the partitions' own counts need: no attribute's
        children block but the specialized one's (its pass over the moved records gives the
        own counts too). A rerun's prefix probe (party/handlers/lkc_session.py) answers only
        the own counts at the last cut: the other blocks were about 60 % of its replay's
        work (bench/RESULTS.md, "#28 session 12"). Unlike :meth:`retire`, every attribute
        may still be specialized: the records' order by atom stays."""
        self._uncount(range(len(self.schema.taxonomies)))

    def _uncount(self, attrs: Iterable[int]) -> None:
        """Leave the children blocks of `attrs` uncounted (zero) in every later vector."""
        retired = np.zeros(self.layout.slots, dtype=bool)
        if self._retired_slots is not None:
            retired |= self._retired_slots
        for a in attrs:
            offset = self.layout.offsets[a]
            retired[offset : offset + self.layout.widths[a]] = True
        self._retired_slots = retired

    def _counted_attrs(self) -> list[int]:
        """The attributes with a children block to count: not retired, and not of width 0
        (a taxonomy of one node, whose block has no slot)."""
        retired, lay = self._retired_slots, self.layout
        return [
            a
            for a in range(len(self.schema.taxonomies))
            if lay.widths[a] and (retired is None or not retired[lay.offsets[a]])
        ]

    def _count_others(
        self,
        applied: AppliedSpecialization,
        attr: int,
        rel: np.ndarray,
        rows: np.ndarray,
        cell: np.ndarray,
        others: list[int],
        out: np.ndarray,
    ) -> None:
        """Fill the blocks of `others` in `out` (the new partitions' statistics, their own and
        the specialized attribute's already counted) for the records `rows` (partitions `rel`,
        cells `cell`) a step moved.

        For an attribute other than the specialized one a child partition has its parent's
        value, so the counts of a parent's children add up to the parent's own: each parent's
        largest child (by local records) is derived as parent minus its siblings, and only
        the other children's records are counted (the histogram-subtraction trick; exact
        integer arithmetic, so the vector is unchanged)."""
        n_new = applied.n_new
        offset, width = self.layout.offsets[attr], self.layout.widths[attr]
        # The largest child of every parent is derived; count the records of the others.
        n_children = (applied.new_index >= 0).sum(axis=1)  # >= 1: a link partition has records
        starts = np.cumsum(n_children) - n_children
        heavy = _largest_of_runs(out[:, 0, 0], starts, n_children)
        light = np.ones(n_new, dtype=bool)
        light[heavy] = False
        counted = light[rel]
        nodes = self.partitions.keys[applied.first_new : applied.first_new + n_new]
        self._count_blocks(cell[counted], rows[counted], nodes, others, out)
        # Only the derived slots of a heavy child are still zero, so summing all its siblings
        # and itself sums the siblings there; its own and `attr` slots were counted directly.
        siblings = _sum_of_runs(out, starts, n_children)
        parents = self._parents(applied.link)  # heavy[i] is the child of link[i]
        own, block = out[heavy, 0, :], out[heavy, offset : offset + width, :]
        out[heavy] = np.subtract(parents, siblings, out=parents)
        out[heavy, 0, :], out[heavy, offset : offset + width, :] = own, block
        if self._retired_slots is not None:  # a parent's block, counted before it retired
            out[:, self._retired_slots, :] = 0

    def specialize(self, step: Specialization) -> np.ndarray:
        """Apply Best to T_g and to the records; return the statistics of the new partitions.

        Only the specialized attribute needs every moved record counted; that one pass also
        gives each new partition's own counts (a record at a leaf is counted for its partition
        only). The other attributes' blocks: :meth:`_count_others`, but for those retired
        (:meth:`retire`), which stay zero.
        """
        apply_splits(self.schema, step.splits)
        self._steps += 1
        attr = step.attr
        children = np.asarray(self.schema.taxonomies[attr].children[step.node], dtype=np.int64)
        applied = self.partitions.apply(step, list(children))
        first, n_new = applied.first_new, applied.n_new
        out = np.zeros((n_new, self.layout.slots, self.layout.channels), dtype=np.int64)
        if n_new == 0:  # no record lies on Link_Best: nothing moves (no pass over records)
            if applied.link.size and np.isin(self.record_partition, applied.link).any():
                raise _disagree()  # a bitmap of no child at all, on local records
            return _frozen_vector(out)
        # Index into link; off Link_Best the row after the last.
        position = np.full(self.partitions.size, applied.link.size, dtype=np.int32)
        position[applied.link] = np.arange(applied.link.size)
        if self.record_partition.size <= _SLICED_RECORDS:
            # the records of the partitions on Link_Best; one off it (a party out of step)
            # maps to the last row
            rows = self._records_under(attr, step.node)
            index = position[self.record_partition[rows]].astype(np.int64)
        else:
            parent_all = np.take(position, self.record_partition)  # int32 indices directly
            rows = np.flatnonzero(parent_all < applied.link.size)
            index = parent_all[rows].astype(np.int64)
        # Column 0 (a record at a leaf, which no partition on Link_Best holds) and the last row
        # map nowhere.
        lookup = np.full((applied.link.size + 1, len(children) + 1), -1, dtype=np.int64)
        lookup[:-1, 1:] = applied.new_index
        index *= len(children) + 1
        index += self._slot[attr][rows]
        target = lookup.reshape(-1)[index]
        if (target < 0).any():
            raise _disagree()
        self.record_partition[rows] = target
        depth = self.schema.taxonomies[attr].depth[step.node] + 1
        slot = self._slots_at(attr, depth, rows)
        self._slot[attr][rows] = slot
        rel = target - first
        profiles = self._profile_channels.shape[0]
        cell = rel  # one profile (no class, no sensitive value): the cell is the partition
        if profiles > 1:
            cell = rel * profiles
            cell += self._profile[rows]
        offset, width = self.layout.offsets[attr], self.layout.widths[attr]
        hist = self._histogram(cell, slot, n_new, width)
        out[:, offset : offset + width, :] = (hist[1:] @ self._profile_channels).swapaxes(0, 1)
        out[:, 0, :] = hist.sum(axis=0) @ self._profile_channels

        # retired blocks stay zero: no record counted
        others = [a for a in self._counted_attrs() if a != attr]
        if not others:  # every other block retired: nothing to derive from the parents
            self._forget(applied.link)
        else:
            self._count_others(applied, attr, rel, rows, cell, others, out)
        self._remember(first, out)
        return _frozen_vector(out)

    def close(self) -> None:
        """Nothing to release: the records are this process's own memory (an engine's
        counting state, :mod:`fedanon.algorithms.tds.engines`, may hold workers')."""

    # ----------------------------------------------------------------- release
    def generalized_table(
        self, suppressed: np.ndarray | None = None, drop_suppressed: bool = False
    ) -> Table:
        """The party's records with QIDs replaced by their cut labels; other columns unchanged.

        Records of the `suppressed` partitions get every QID at its root, or are left out with
        `drop_suppressed` (record suppression, :mod:`fedanon.algorithms.tds.suppression`). The
        QIDs are codes over each taxonomy's distinct labels: Categoricals in a DataFrame,
        dictionary columns in an Arrow table (both written as their labels).
        """
        partition, hit, keep = self._released_records(suppressed, drop_suppressed)
        table = self.table
        if isinstance(table, CodedTable):  # a shard: its other columns rebuilt from codes
            table = table.frame(keep)
        elif keep is not None:
            table = keep_rows(table, keep)
        coded = {}
        for a, tax in enumerate(self.schema.taxonomies):
            label_codes, labels = _label_codes(tax.labels)
            # the narrowest codes, as a Categorical keeps them, and never a full-length int64
            # column per QID at once (13 of them at 10M rows are a gigabyte)
            width = (
                np.int8 if len(labels) < 1 << 7 else np.int16 if len(labels) < 1 << 15 else np.int32
            )
            node = self._released_nodes(a, partition, hit)
            coded[tax.attribute] = (label_codes.astype(width)[node], labels)
        if isinstance(table, pa.Table):
            return _arrow_release(table, coded)
        import pandas as pd  # the caller's table is a DataFrame: pandas is loaded

        # a shard's frame lacks its QIDs (their codes stand for them): the release's columns
        # are the ones the party was given, in order
        columns: dict[str, Any] = {}
        for name in self.columns:
            if name in coded:
                codes, labels = coded[name]
                columns[name] = pd.Categorical.from_codes(codes, categories=pd.Index(labels))
            else:
                columns[name] = table[name]
        return pd.DataFrame(columns, index=table.index)

    def _released_records(
        self, suppressed: np.ndarray | None, drop_suppressed: bool
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """The released records' partitions, which of them are released at the roots (None:
        none) and which records are kept (None: all)."""
        partition = self.record_partition
        if suppressed is None or not suppressed.size:
            return partition, None, None
        flag = np.zeros(self.partitions.size, dtype=bool)  # one gather, not isin's sort
        flag[suppressed] = True
        hit = flag[partition]
        if drop_suppressed:
            return partition[~hit], None, ~hit
        return partition, hit, None

    def _released_nodes(
        self, attr: int, partition: np.ndarray, hit: np.ndarray | None
    ) -> np.ndarray:
        """Each released record's cut node on `attr` (the root where `hit`): one QID at a
        time, never every QID's node of every record at once."""
        node = self.partitions.keys[:, attr][partition]
        if hit is not None:
            node[hit] = self.schema.taxonomies[attr].root
        return node

    def released(
        self, encode: Encode, suppressed: np.ndarray | None = None, drop_suppressed: bool = False
    ) -> CodedRelease:
        """The generalized records (:meth:`generalized_table`) as distinct rows, each encoded
        by `encode` when a part of them is read, and a code per record, made from codes: a
        QID's text is its cut node's label, another column's its distinct values' (a shard's
        codes, or the table's column numbered by text), never a table of text. The union reads
        them twice (to measure, to seal), so the last are kept for their cut, suppressed
        partitions, mode and encoding."""
        wanted = (
            self._steps,
            None if suppressed is None else suppressed.tobytes(),
            drop_suppressed,
            encode,
        )
        if self._released is None or self._released[0] != wanted:
            self._released = None  # the old ones go before the new ones are made
            self._released = (
                wanted,
                CodedRelease(self._text_columns(suppressed, drop_suppressed), encode),
            )
        return self._released[1]

    def _text_columns(
        self, suppressed: np.ndarray | None, drop_suppressed: bool
    ) -> list[TextColumn]:
        """The released columns, in order, as a code per record and each code's text."""
        partition, hit, keep = self._released_records(suppressed, drop_suppressed)
        attrs = {tax.attribute: a for a, tax in enumerate(self.schema.taxonomies)}
        table = self.table
        if keep is not None and not isinstance(table, CodedTable):
            table = keep_rows(table, keep)
        columns = []
        for name in self.columns:
            if name in attrs:
                labels = np.asarray(self.schema.taxonomies[attrs[name]].labels, dtype=object)
                columns.append(
                    TextColumn(self._released_nodes(attrs[name], partition, hit), labels)
                )
            elif isinstance(table, CodedTable):
                column = table.columns[name]
                codes = column.codes if keep is None else column.codes[keep]
                columns.append(TextColumn(codes, column.texts))
            else:
                columns.append(TextColumn(*text_codes(table[name])))
        return columns

    def released_rows(
        self, encode: Encode, suppressed: np.ndarray | None = None, drop_suppressed: bool = False
    ) -> Iterator[ReleasedRows]:
        """The union's input: :meth:`released` in parts of ``RELEASE_BATCH_RECORDS`` records
        (whoever takes them holds one part's rows at a time)."""
        whole = self.released(encode, suppressed, drop_suppressed)
        for part in range(whole.parts(RELEASE_BATCH_RECORDS)):
            start = part * RELEASE_BATCH_RECORDS
            yield whole.part(start, start + RELEASE_BATCH_RECORDS)


def _arrow_release(table: pa.Table, coded: dict[str, tuple[np.ndarray, np.ndarray]]) -> pa.Table:
    """`table` with each coded QID as a dictionary column over its labels (in place)."""
    columns = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        if name in coded:
            codes, labels = coded[name]
            column = pa.DictionaryArray.from_arrays(arrow_of(codes), strings_of(labels.tolist()))
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


def _label_codes(labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each node's code over the distinct labels (numbered in order of first occurrence, as
    :func:`fedanon.text.factorize` numbers them) and those labels. A taxonomy has few nodes, so
    a dict is cheaper here than a hashing pass in Arrow, which costs more to set up than the
    few hundred labels take."""
    index: dict[str, int] = {}
    codes = [index.setdefault(label, len(index)) for label in labels]
    return np.array(codes, dtype=np.int64), np.array(list(index), dtype=object)


def apply_splits(schema: Schema, splits: Sequence[DynamicSplit]) -> None:
    """Grow dynamic trees as the leader decided (a shared tree may already be grown)."""
    for sp in splits:
        tax = schema.taxonomies[sp.attr]
        kids = tax.children[sp.node]
        if not kids:
            tax.split(sp.node, sp.first_right_atom)
        elif tax.atom_lo[kids[1]] != sp.first_right_atom:
            raise FedanonError(f"conflicting split of '{tax.labels[sp.node]}'")


def _largest_of_runs(sizes: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Index of the largest element of each run ``sizes[starts[i] : starts[i] + lengths[i]]``
    (the first of equals; runs are consecutive, non-empty and cover `sizes`): each run's
    maximum, then the lowest position holding it, a fixed handful of passes however long the
    runs are."""
    top = np.maximum.reduceat(sizes, starts)
    at_top = sizes == np.repeat(top, lengths)
    positions = np.where(at_top, np.arange(sizes.size), sizes.size)
    return np.minimum.reduceat(positions, starts)


def _sum_of_runs(stats: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Sum over the first axis of each run ``stats[starts[i] : starts[i] + lengths[i]]``.

    One vectorized pass per position in a run (runs are a parent's children, a few at most):
    ``np.add.reduceat`` on the first axis of these blocks costs about five times as much.
    """
    total = stats[starts]
    for j in range(1, int(lengths.max(initial=1))):
        more = np.flatnonzero(lengths > j)
        if more.size == starts.size:
            total += stats[starts + j]
        else:
            total[more] += stats[starts[more] + j]
    return total


def _disagree() -> FedanonError:
    """An instruction whose bitmap leaves local records in no group: they would vanish from
    every later count and from the release."""
    return FedanonError(
        "instruction marks a child group empty that holds local records "
        "(parties disagree on the data)"
    )


def _frozen_vector(stats: np.ndarray) -> np.ndarray:
    """The flat uint64 statistics vector, as a read-only view of `stats` (kept as parents'
    counts): no copy, and a consumer that tried to change it in place would fail loudly."""
    stats.flags.writeable = False
    return stats.reshape(-1).view(np.uint64)
