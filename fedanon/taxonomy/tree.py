"""Taxonomy trees for one attribute, in the form the engine computes with.

Every tree is reduced to *atoms*: the finest units a raw value maps to (a categorical leaf, a leaf
interval of a given numerical tree, or a distinct value for a dynamic numerical tree). Atoms are
numbered in depth-first order, so every node covers a contiguous atom range ``[atom_lo, atom_hi)``.
That makes the two hot operations pure array work: generalizing a record is a lookup
``atom -> current cut node``, and finding which child of a node holds a record is one
``searchsorted`` over the children's first atoms.

Node ids are assigned in depth-first pre-order, which is also the "taxonomy order" used to break
ties deterministically.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar

import numpy as np

from fedanon.errors import FedanonError
from fedanon.tables import strings_of
from fedanon.text import Column, as_numbers, distinct_text, factorize_column, lookup_codes, text_at

if TYPE_CHECKING:
    import pandas as pd

Kind = Literal["categorical", "numeric"]
T = TypeVar("T")

#: The deepest taxonomy a file may give (levels below the root). Real hierarchies have a few
#: levels; the tree code recurses once per level, so a deeper (hostile) file is refused with
#: one line by every reader instead of ending in a RecursionError.
MAX_DEPTH = 100


def depth_error(where: str) -> FedanonError:
    """The one-line refusal of a taxonomy deeper than :data:`MAX_DEPTH`."""
    return FedanonError(f"{where}: the taxonomy is more than {MAX_DEPTH} levels deep")


def require_depth(root: T, children: Callable[[T], Iterable[T]], where: str) -> None:
    """Refuse a tree (any node type, walked iteratively) deeper than :data:`MAX_DEPTH`."""
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise depth_error(where)
        stack.extend((child, depth + 1) for child in children(node))


@dataclass
class Spec:
    """A tree as readers produce it, before numbering: a label, bounds for intervals, children."""

    label: str
    children: list[Spec] = field(default_factory=list)
    lo: float | None = None
    hi: float | None = None


def _spec_children(spec: Spec) -> list[Spec]:
    return spec.children


def format_number(x: float) -> str:
    """Print interval bounds without a trailing '.0' for whole numbers."""
    if math.isfinite(x) and float(x).is_integer():
        return str(int(x))
    return repr(float(x))


def interval_label(lo: float, hi: float, closed: bool = False) -> str:
    """The release label of an interval: ``[lo-hi)``, or ``[lo-hi]`` when the upper end is in."""
    return f"[{format_number(lo)}-{format_number(hi)}{']' if closed else ')'}"


class Taxonomy:
    """One attribute's generalization tree, numbered for vectorized use.

    Build it with :meth:`categorical`, :meth:`numeric` (a given interval tree) or :meth:`dynamic`
    (a numerical tree grown at specialization time by the engine).
    """

    def __init__(self, attribute: str, kind: Kind, dynamic: bool = False) -> None:
        self.attribute = attribute
        self.kind: Kind = kind
        self.is_dynamic = dynamic  # grown by the engine; built by the `dynamic` classmethod
        self.labels: list[str] = []
        self.parent: list[int] = []
        self.children: list[list[int]] = []
        self.depth: list[int] = []
        self.atom_lo: list[int] = []
        self.atom_hi: list[int] = []
        self.node_lo: list[float] = []
        self.node_hi: list[float] = []
        self.atom_labels: list[str] = []
        self.atom_values: np.ndarray = np.empty(0)
        self._atom_index: dict[str, int] = {}
        # Leaves that are all numbers (an ARX age hierarchy): data values match them by value.
        self.numeric_leaves = False
        self._n_leaves = 0
        self._ancestors: np.ndarray | None = None
        self._rank = np.zeros(0, dtype=np.int32)
        self._ancestors_nodes = 0

    # ----------------------------------------------------------------- construction
    @classmethod
    def categorical(cls, attribute: str, root: Spec) -> Taxonomy:
        """A categorical tree; leaves are the raw values, which must be unique."""
        require_depth(root, _spec_children, f"taxonomy of '{attribute}'")
        tax = cls(attribute, "categorical")
        tax._add_subtree(root, -1)
        for node in range(tax.n_nodes):
            if not tax.children[node]:
                label = tax.labels[node]
                if label in tax._atom_index:
                    raise FedanonError(
                        f"taxonomy of '{attribute}': leaf value '{label}' appears twice"
                    )
                tax._atom_index[label] = len(tax.atom_labels)
                tax.atom_labels.append(label)
        return tax

    @classmethod
    def numeric(cls, attribute: str, root: Spec) -> Taxonomy:
        """A given nested interval tree of half-open intervals ``[lo, hi)``."""
        require_depth(root, _spec_children, f"taxonomy of '{attribute}'")
        tax = cls(attribute, "numeric")
        tax._check_intervals(root)
        tax._add_subtree(root, -1)
        leaves = [n for n in range(tax.n_nodes) if not tax.children[n]]
        tax.atom_labels = [tax.labels[n] for n in leaves]
        tax.atom_values = np.array([tax.node_lo[n] for n in leaves], dtype=float)
        return tax

    @classmethod
    def dynamic(cls, attribute: str, values: np.ndarray | pd.Series) -> Taxonomy:
        """A numerical tree whose atoms are the distinct values; only the root exists at first.

        The engine grows it with :meth:`split` (binary splits chosen by information gain).
        Non-numbers (including missing values) are input errors naming the first bad row.
        """
        raw: np.ndarray | pd.Series
        if isinstance(values, np.ndarray) and values.dtype.kind == "f":
            raw, numbers = values, values  # numbers already (the LKC schema parses them)
        else:
            import pandas as pd

            raw = pd.Series(values).reset_index(drop=True)
            numbers = np.asarray(pd.to_numeric(raw, errors="coerce"), dtype=float)
        bad = np.flatnonzero(~np.isfinite(numbers))
        if bad.size:
            row = int(bad[0])
            raise FedanonError(
                f"column '{attribute}': value '{raw[row]}' (first at row {row + 1}) "
                "is not a finite number"
            )
        distinct = np.unique(numbers)
        if distinct.size == 0:
            raise FedanonError(f"column '{attribute}': no values to build a dynamic taxonomy")
        tax = cls(attribute, "numeric", dynamic=True)
        tax.atom_values = distinct
        tax.atom_labels = [format_number(v) for v in distinct]
        lo, hi = float(distinct[0]), float(distinct[-1])
        tax._append(interval_label(lo, hi, closed=True), -1, 0, distinct.size, lo, hi)
        return tax

    def _append(
        self, label: str, parent: int, atom_lo: int, atom_hi: int, lo: float, hi: float
    ) -> int:
        node = len(self.labels)
        self.labels.append(label)
        self.parent.append(parent)
        self.children.append([])
        self.depth.append(0 if parent < 0 else self.depth[parent] + 1)
        self.atom_lo.append(atom_lo)
        self.atom_hi.append(atom_hi)
        self.node_lo.append(lo)
        self.node_hi.append(hi)
        if parent >= 0:
            self.children[parent].append(node)
        return node

    def _add_subtree(self, spec: Spec, parent: int) -> int:
        """Number `spec` in DFS pre-order; atoms are the leaves in that order."""
        first_atom = self._leaf_count_so_far()
        lo = math.nan if spec.lo is None else float(spec.lo)
        hi = math.nan if spec.hi is None else float(spec.hi)
        label = spec.label if self.kind == "categorical" else interval_label(lo, hi)
        node = self._append(label, parent, first_atom, first_atom, lo, hi)
        if not spec.children:
            self.atom_hi[node] = first_atom + 1
            self._n_leaves += 1
        else:
            labels = [c.label for c in spec.children]
            if self.kind == "categorical" and len(set(labels)) != len(labels):
                raise FedanonError(
                    f"taxonomy of '{self.attribute}': node '{spec.label}' has duplicate children"
                )
            for child in spec.children:
                self._add_subtree(child, node)
            self.atom_hi[node] = self._leaf_count_so_far()
        return node

    def _leaf_count_so_far(self) -> int:
        return self._n_leaves

    def _check_intervals(self, spec: Spec) -> None:
        if spec.lo is None or spec.hi is None or not spec.lo < spec.hi:
            raise FedanonError(
                f"taxonomy of '{self.attribute}': bad interval '{spec.label}' (need lo < hi)"
            )
        spec.children.sort(key=lambda c: c.lo if c.lo is not None else math.inf)
        prev_hi = spec.lo
        for child in spec.children:
            self._check_intervals(child)
            if child.lo < prev_hi or child.hi > spec.hi:  # type: ignore[operator]
                raise FedanonError(
                    f"taxonomy of '{self.attribute}': interval '{child.label}' overlaps a sibling "
                    f"or leaves its parent '{spec.label}'"
                )
            prev_hi = child.hi  # type: ignore[assignment]

    # ----------------------------------------------------------------- queries
    @property
    def n_nodes(self) -> int:
        return len(self.labels)

    @property
    def n_atoms(self) -> int:
        return len(self.atom_labels)

    @property
    def root(self) -> int:
        return 0

    @property
    def max_children(self) -> int:
        """Widest branching; a dynamic tree splits in two."""
        if self.is_dynamic:
            return 2
        return max((len(c) for c in self.children), default=0)

    def is_leaf(self, node: int) -> bool:
        """A node that cannot be specialized further.

        A dynamic node is split (or declared a leaf) by the engine as soon as it enters the cut,
        so "no children" means leaf for every kind of tree.
        """
        return not self.children[node]

    def ancestor_table(self) -> np.ndarray:
        """``table[atom, depth]`` = the node at `depth` on the path from the root to the atom.

        Rebuilt when a dynamic tree grows; -1 below an atom's deepest node.
        """
        if self._ancestors is None or self._ancestors_nodes != self.n_nodes:
            table = np.full((self.n_atoms, max(self.depth) + 2), -1, dtype=np.int32)
            for node in range(self.n_nodes):
                table[self.atom_lo[node] : self.atom_hi[node], self.depth[node]] = node
            rank = np.zeros(self.n_nodes, dtype=np.int32)
            for kids in self.children:
                rank[kids] = np.arange(len(kids), dtype=np.int32)
            self._ancestors, self._rank, self._ancestors_nodes = table, rank, self.n_nodes
        return self._ancestors

    def child_rank(self) -> np.ndarray:
        """``rank[node]`` = position of the node among its parent's children (taxonomy order)."""
        self.ancestor_table()
        return self._rank

    def child_slots(self, nodes: np.ndarray, atoms: np.ndarray) -> np.ndarray:
        """For records at non-leaf cut nodes `nodes` with raw atoms `atoms`: the child position."""
        depth = np.asarray(self.depth, dtype=np.int64)
        child = self.ancestor_table()[atoms, depth[nodes] + 1]
        return self.child_rank()[child]

    def leaves_under(self, node: int) -> int:
        return self.atom_hi[node] - self.atom_lo[node]

    def split(self, node: int, first_right_atom: int) -> tuple[int, int]:
        """Grow a dynamic tree: split `node` before atom `first_right_atom` into two children."""
        if not self.is_dynamic or self.children[node]:
            raise ValueError("only an unsplit node of a dynamic taxonomy can be split")
        lo_atom, hi_atom = self.atom_lo[node], self.atom_hi[node]
        if not lo_atom < first_right_atom < hi_atom:
            raise ValueError("split point must leave atoms on both sides")
        closed = self.labels[node].endswith("]")
        mid = float(
            (self.atom_values[first_right_atom - 1] + self.atom_values[first_right_atom]) / 2
        )
        lo, hi = self.node_lo[node], self.node_hi[node]
        left = self._append(interval_label(lo, mid), node, lo_atom, first_right_atom, lo, mid)
        right = self._append(
            interval_label(mid, hi, closed=closed), node, first_right_atom, hi_atom, mid, hi
        )
        return left, right

    # ----------------------------------------------------------------- encoding
    def encode(self, column: Column) -> np.ndarray:
        """Map raw values to atom indices; unknown or out-of-range values are input errors."""
        if self.kind == "categorical":
            return self._encode_categorical(column)
        return self._encode_numeric(column)

    def match_leaves_by_number(self) -> bool:
        """Match data values to leaves by numeric value (``39.0`` -> leaf ``39``), as ARX does
        for an integer or decimal attribute. Only when every leaf is a distinct finite number;
        returns whether the tree now matches that way."""
        if not all(any(c.isdigit() for c in label) for label in self.atom_labels):
            return False  # a leaf without a digit is no finite number to any parser
        numbers, bad = as_numbers(strings_of(self.atom_labels))
        if bad is not None or not np.isfinite(numbers).all() or len(set(numbers)) < len(numbers):
            return False
        self.numeric_leaves = True
        self._leaf_numbers = dict(zip(numbers.tolist(), range(len(numbers)), strict=True))
        return True

    def _encode_categorical(self, column: Column) -> np.ndarray:
        lookup = self._atom_index
        if self.numeric_leaves:
            unknown = [text for text in distinct_text(column) if text not in self._atom_index]
            numbers, _ = as_numbers(strings_of(unknown))
            lookup = {
                **lookup,
                **{
                    text: self._leaf_numbers[x]
                    for text, x in zip(unknown, numbers.tolist(), strict=True)
                    if x in self._leaf_numbers
                },
            }
        atoms, row = lookup_codes(column, lookup)
        if row is not None:
            raise FedanonError(
                f"column '{self.attribute}': value '{text_at(column, row)}' (first at row "
                f"{row + 1}) is not a leaf of its taxonomy"
            )
        return atoms.astype(np.int32)

    def _encode_numeric(self, column: Column) -> np.ndarray:
        """Atoms of a numerical column. Each distinct value is converted and placed once (a
        column of a million ages has under a hundred): one hash pass over the rows, instead of
        a parse, a binary search and the bounds tests per row."""
        codes, uniques = factorize_column(column)  # code -1: a missing value (not a number)
        x, _ = as_numbers(uniques)
        atoms, inside = self._atoms_of_numbers(x)
        # One more entry for code -1, so that every row indexes the per-value arrays.
        number, fits = np.append(~np.isnan(x), False), np.append(inside, False)
        if not (number & fits)[codes].all():
            not_number = np.flatnonzero(~number[codes])
            row = int(not_number[0] if not_number.size else np.flatnonzero(~fits[codes])[0])
            problem = (
                "is not a number"
                if not_number.size
                else f"lies outside every leaf interval of its taxonomy (root {self.labels[0]})"
            )
            raise FedanonError(
                f"column '{self.attribute}': value '{text_at(column, row)}' (first at row "
                f"{row + 1}) {problem}"
            )
        return atoms.astype(np.int32)[codes]

    def _atoms_of_numbers(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(atom index, whether the number lies in a leaf) for numbers `x` (no NaN checks)."""
        if self.is_dynamic:
            atoms = np.searchsorted(self.atom_values, x)
            inside = (atoms < self.n_atoms) & (
                self.atom_values[np.minimum(atoms, self.n_atoms - 1)] == x
            )
        else:
            atoms = np.searchsorted(self.atom_values, x, side="right") - 1
            leaf_nodes = np.array(
                [n for n in range(self.n_nodes) if not self.children[n]], dtype=np.int64
            )
            hi = np.array(self.node_hi, dtype=float)[leaf_nodes]
            safe = np.clip(atoms, 0, self.n_atoms - 1)
            inside = (atoms >= 0) & (x < hi[safe])
        return atoms, inside

    def fingerprint_items(self) -> list[str]:
        """Canonical text lines describing the tree, for handshake fingerprints and diffs."""
        lines = [f"{self.attribute}:{self.kind}:{'dynamic' if self.is_dynamic else 'given'}"]
        if not self.is_dynamic:
            for node in range(self.n_nodes):
                parent = self.parent[node]
                parent_label = self.labels[parent] if parent >= 0 else "-"
                lines.append(f"{self.attribute}/{parent_label}/{self.labels[node]}")
        return lines
