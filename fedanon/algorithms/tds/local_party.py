"""A party's private records and its copy of T_g: the engine's in-process count source.

The party daemon of the distributed mode wraps exactly this class, so centralized and distributed
anonymization count with one implementation. All work is vectorized over records: each QID is
encoded once as atom codes; a record's generalized value is the key of its partition; applying a
specialization moves only the records of the partitions on Link_Best.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from fedanon.algorithms.tds.layout import (
    DynamicSplit,
    PartitionTable,
    Specialization,
    StatsLayout,
)
from fedanon.errors import FedanonError
from fedanon.schema import Schema
from fedanon.text import as_text, lookup_codes


class LocalParty:
    """Counts over one party's records in the canonical layout; applies instructions."""

    def __init__(self, schema: Schema, table: pd.DataFrame) -> None:
        self.schema = schema
        self.table = table
        self.layout = StatsLayout.for_schema(schema)
        self.atoms = [tax.encode(table[tax.attribute]) for tax in schema.taxonomies]
        self.classes = self._encode_class(table)
        self.sensitive = self._encode_sensitive(table)
        self.partitions = PartitionTable.with_roots([t.root for t in schema.taxonomies])
        self.record_partition = np.zeros(len(table), dtype=np.int64)

    # ----------------------------------------------------------------- encoding
    def _encode_class(self, table: pd.DataFrame) -> np.ndarray | None:
        column, values = self.schema.class_column, self.schema.class_values
        if column is None:
            return None
        if column not in table.columns:
            raise FedanonError(f"class column '{column}' is missing from the table")
        out, row = lookup_codes(table[column], {v: i for i, v in enumerate(values)})
        if row is not None:
            raise FedanonError(
                f"class column '{column}': value '{as_text(table[column]).iloc[row]}' (first at "
                f"row {row + 1}) is not one of the class values {values}"
            )
        return out

    def _encode_sensitive(self, table: pd.DataFrame) -> np.ndarray:
        out = np.zeros((len(self.schema.sensitive), len(table)), dtype=bool)
        for j, s in enumerate(self.schema.sensitive):
            if s.column not in table.columns:
                raise FedanonError(f"sensitive column '{s.column}' is missing from the table")
            out[j] = (as_text(table[s.column]) == s.value).to_numpy(dtype=bool)
        return out

    # ----------------------------------------------------------------- counting
    def _channel_counts(self, key: np.ndarray, n_keys: int, rows: np.ndarray) -> np.ndarray:
        """(n_keys, channels) counts of records `rows` grouped by `key` (same length as rows)."""
        lay = self.layout
        out = np.zeros((n_keys, lay.channels), dtype=np.int64)
        out[:, 0] = np.bincount(key, minlength=n_keys)
        if self.classes is not None and lay.n_class:
            cls = self.classes[rows]
            out[:, 1 : 1 + lay.n_class] = np.bincount(
                key * lay.n_class + cls, minlength=n_keys * lay.n_class
            ).reshape(n_keys, lay.n_class)
        for j in range(lay.n_sensitive):
            hit = self.sensitive[j, rows]
            out[:, 1 + lay.n_class + j] = np.bincount(key[hit], minlength=n_keys)
        return out

    def _stats(self, first: int, count: int) -> np.ndarray:
        """Flat statistics of partitions ``first .. first+count-1`` in the canonical layout."""
        lay = self.layout
        rows = np.flatnonzero(self.record_partition >= first)
        rel = self.record_partition[rows] - first
        out = np.zeros((count, lay.slots, lay.channels), dtype=np.int64)
        out[:, 0, :] = self._channel_counts(rel, count, rows)
        keys = self.partitions.keys[first : first + count]
        for a, (tax, width, offset) in enumerate(
            zip(self.schema.taxonomies, lay.widths, lay.offsets, strict=True)
        ):
            if width == 0:
                continue
            nodes = keys[rel, a]
            leaf = np.array([tax.is_leaf(n) for n in range(tax.n_nodes)], dtype=bool)
            inner = ~leaf[nodes]
            if not inner.any():
                continue
            sel_rows = rows[inner]
            slot = tax.child_slots(nodes[inner], self.atoms[a][sel_rows])
            key = rel[inner] * width + slot
            counts = self._channel_counts(key, count * width, sel_rows)
            out[:, offset : offset + width, :] = counts.reshape(count, width, lay.channels)
        return out.reshape(-1).astype(np.uint64)

    # ----------------------------------------------------------------- protocol steps
    def atom_histogram(self, attr: int, node: int) -> np.ndarray:
        """Class counts per atom under `node` (for choosing a dynamic numerical split)."""
        tax = self.schema.taxonomies[attr]
        lo, hi = tax.atom_lo[node], tax.atom_hi[node]
        atoms = self.atoms[attr]
        rows = np.flatnonzero((atoms >= lo) & (atoms < hi))
        n_class = max(1, self.layout.n_class)
        cls = self.classes[rows] if self.classes is not None else np.zeros(rows.size, np.int64)
        hist = np.bincount((atoms[rows] - lo) * n_class + cls, minlength=(hi - lo) * n_class)
        return hist.reshape(hi - lo, n_class)

    def _apply_splits(self, splits: Sequence[DynamicSplit]) -> None:
        """Grow dynamic trees as the leader decided (a shared tree may already be grown)."""
        for sp in splits:
            tax = self.schema.taxonomies[sp.attr]
            kids = tax.children[sp.node]
            if not kids:
                tax.split(sp.node, sp.first_right_atom)
            elif tax.atom_lo[kids[1]] != sp.first_right_atom:
                raise FedanonError(f"conflicting split of '{tax.labels[sp.node]}'")

    def start(self, splits: Sequence[DynamicSplit] = ()) -> np.ndarray:
        """Statistics of the single initial partition (every record at the roots)."""
        self._apply_splits(splits)
        return self._stats(0, 1)

    def specialize(self, step: Specialization) -> np.ndarray:
        """Apply Best to T_g and to the records; return the statistics of the new partitions."""
        self._apply_splits(step.splits)
        tax = self.schema.taxonomies[step.attr]
        children = tax.children[step.node]
        applied = self.partitions.apply(step, children)
        position = np.full(self.partitions.size, -1, dtype=np.int64)
        position[applied.link] = np.arange(applied.link.size)
        rows = np.flatnonzero(position[self.record_partition] >= 0)
        if rows.size:
            slot = tax.child_slots(
                np.full(rows.size, step.node, dtype=np.int64), self.atoms[step.attr][rows]
            )
            target = applied.new_index[position[self.record_partition[rows]], slot]
            if (target < 0).any():
                raise FedanonError(
                    "instruction marks a child group empty that holds local records "
                    "(parties disagree on the data)"
                )
            self.record_partition[rows] = target
        return self._stats(applied.first_new, applied.n_new)

    # ----------------------------------------------------------------- release
    def generalized_table(
        self, suppressed: np.ndarray | None = None, drop_suppressed: bool = False
    ) -> pd.DataFrame:
        """The party's records with QIDs replaced by their cut labels; other columns unchanged.

        Records of the `suppressed` partitions get every QID at its root, or are left out with
        `drop_suppressed` (record suppression, :mod:`fedanon.algorithms.tds.suppression`).
        """
        keys = self.partitions.keys[self.record_partition]
        table = self.table
        if suppressed is not None and suppressed.size:
            hit = np.isin(self.record_partition, suppressed)
            if drop_suppressed:
                keys, table = keys[~hit], table[~hit]
            else:
                keys = keys.copy()
                keys[hit] = [t.root for t in self.schema.taxonomies]
        columns: dict[str, pd.Series | pd.Categorical] = {
            name: table[name] for name in table.columns
        }
        for a, tax in enumerate(self.schema.taxonomies):
            label_codes, labels = pd.factorize(pd.Index(tax.labels))
            columns[tax.attribute] = pd.Categorical.from_codes(
                label_codes[keys[:, a]], categories=labels
            )
        return pd.DataFrame(columns, index=table.index)
