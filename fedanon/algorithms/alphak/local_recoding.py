"""Top-down local recoding to (alpha,k)-anonymity (docs/alpha-k.md, "Local recoding").

Every record starts generalized to the roots in one node. A node is specialized by one attribute
one level down: its records go to the child of the node's value that holds their raw value.
Children that violate (alpha,k) give their records back to the parent; if the records left at
the parent then violate, records move back from satisfying children (largest child first, and of
the sensitive values the child can spare, the one least represented at the parent, which dilutes
the parent's dominant value fastest) until the parent satisfies and the children still do. The
attribute chosen is the one whose specialization leaves the most records in satisfying children
(ties: the earlier attribute); the records left at the parent form one output class, and the
children are specialized in turn. A node that no attribute can improve is an output class.

Which records move back is drawn with the seeded generator, so a run is deterministic given its
seed. Work per node is a few bincounts over the node's records per attribute; the tuple moves are
planned on the (child x sensitive value) count matrix, never record by record.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedanon.algorithms.alphak.params import AlphaK
from fedanon.taxonomy.tree import Taxonomy


@dataclass
class Partition:
    """The output classes: a class index per record and a taxonomy node per class and QID."""

    class_of_row: np.ndarray
    nodes: np.ndarray


@dataclass
class _Split:
    """A planned specialization of one node by one attribute."""

    attr: int
    slot: np.ndarray
    satisfying: np.ndarray
    moved: np.ndarray
    kept: int


def plan_split(counts: np.ndarray, params: AlphaK) -> tuple[np.ndarray, np.ndarray] | None:
    """Which children keep records and how many of each value move back to the parent.

    `counts[c, v]` is the number of records of child c with sensitive value v. Returns
    (satisfying child mask, moved[c, v]) or None when the parent cannot be repaired.
    """
    sizes = counts.sum(axis=1)
    satisfying = params.satisfied(sizes, counts.max(axis=1)) & (sizes > 0)
    parent = counts[~satisfying].sum(axis=0)
    moved = np.zeros_like(counts)
    if parent.sum() == 0 or _ok(parent, params):
        return satisfying, moved
    remaining = np.where(satisfying[:, None], counts, 0)
    n_values = counts.shape[1]
    less_one = np.eye(n_values, dtype=counts.dtype)
    while not _ok(parent, params):
        donor = -1
        for child in np.lexsort((np.arange(len(sizes)), -remaining.sum(axis=1))):
            size = int(remaining[child].sum())
            if not satisfying[child] or size <= params.k - 1:
                continue
            after = remaining[child][None, :] - less_one
            can = (remaining[child] > 0) & params.satisfied(
                np.full(n_values, size - 1), after.max(axis=1)
            )
            if can.any():
                candidates = np.flatnonzero(can)
                value = int(candidates[np.argmin(parent[candidates])])
                donor = int(child)
                break
        if donor < 0:
            return None
        remaining[donor, value] -= 1
        moved[donor, value] += 1
        parent[value] += 1
    return satisfying, moved


def _ok(counts: np.ndarray, params: AlphaK) -> bool:
    return bool(params.satisfied(np.array([counts.sum()]), np.array([counts.max()]))[0])


def top_down_local_recoding(
    atoms: list[np.ndarray],
    taxonomies: list[Taxonomy],
    sensitive: np.ndarray,
    n_values: int,
    params: AlphaK,
    seed: int,
) -> Partition:
    """Partition the records into (alpha,k) classes by top-down local recoding.

    `atoms[a]` are the records' atom codes under `taxonomies[a]`; `sensitive` their value codes
    in ``range(n_values)``. The caller has checked that the whole table satisfies (alpha,k).
    """
    rng = np.random.default_rng(seed)
    ancestors = [t.ancestor_table() for t in taxonomies]
    ranks = [t.child_rank() for t in taxonomies]
    class_of_row = np.full(len(sensitive), -1, dtype=np.int64)
    class_nodes: list[tuple[int, ...]] = []
    stack: list[tuple[np.ndarray, tuple[int, ...]]] = [
        (np.arange(len(sensitive)), tuple(t.root for t in taxonomies))
    ]
    while stack:
        rows, gen = stack.pop()
        split = _best_split(
            rows, gen, atoms, taxonomies, ancestors, ranks, sensitive, n_values, params
        )
        if split is None:
            class_of_row[rows] = len(class_nodes)
            class_nodes.append(gen)
            continue
        to_parent = [rows[~split.satisfying[split.slot]]]
        sens = sensitive[rows]
        for child in np.flatnonzero(split.satisfying):
            in_child = split.slot == child
            keep = in_child.copy()
            for value in np.flatnonzero(split.moved[child]):
                pool = np.flatnonzero(in_child & (sens == value))
                back = rng.choice(pool, size=int(split.moved[child, value]), replace=False)
                keep[back] = False
                to_parent.append(rows[back])
            node = taxonomies[split.attr].children[gen[split.attr]][child]
            child_gen = (*gen[: split.attr], node, *gen[split.attr + 1 :])
            stack.append((rows[keep], child_gen))
        remainder = np.concatenate(to_parent)
        if remainder.size:
            class_of_row[remainder] = len(class_nodes)
            class_nodes.append(gen)
    nodes = np.array(class_nodes, dtype=np.int64).reshape(len(class_nodes), len(taxonomies))
    return Partition(class_of_row, nodes)


def _best_split(
    rows: np.ndarray,
    gen: tuple[int, ...],
    atoms: list[np.ndarray],
    taxonomies: list[Taxonomy],
    ancestors: list[np.ndarray],
    ranks: list[np.ndarray],
    sensitive: np.ndarray,
    n_values: int,
    params: AlphaK,
) -> _Split | None:
    """The attribute whose one-level specialization keeps the most records in children."""
    best: _Split | None = None
    sens = sensitive[rows]
    for attr, tax in enumerate(taxonomies):
        node = gen[attr]
        if tax.is_leaf(node):
            continue
        slot = ranks[attr][ancestors[attr][atoms[attr][rows], tax.depth[node] + 1]]
        n_children = len(tax.children[node])
        counts = np.bincount(slot * n_values + sens, minlength=n_children * n_values).reshape(
            n_children, n_values
        )
        plan = plan_split(counts, params)
        if plan is None:
            continue
        satisfying, moved = plan
        kept = int(counts[satisfying].sum() - moved.sum())
        if kept > 0 and (best is None or kept > best.kept):
            best = _Split(attr, slot.astype(np.int64), satisfying, moved, kept)
    return best
