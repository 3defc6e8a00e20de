"""Phase 2 of kACTUS: prune the tree bottom-up, releasing the records of complying leaves.

Our reading of the paper's algorithm, with its gaps closed (docs/kactus.md):

- Internal nodes are handled in post-order, so a node is handled once all its children are
  leaves (height 1), and it then becomes a leaf itself.
- At node p, a child with at least k records complies: its records are shuffled with the run's
  generator; the first |R_v| - k are surplus, the other k are released under the child's path.
- nui is the number of records in the non-complying children. If 0 < nui < k, the surplus
  records of all complying children are pooled and shuffled; ``k - nui`` of them are kept back
  (donated to p) when the pool holds that many, so that p, once pruned, complies. If the pool is
  too small, or nui is 0 or at least k, no record is donated. Surplus that is not donated is
  released with the child it came from.
- p becomes a leaf holding the non-complying records and the donated ones.
- At the root leaf, the records left (with the root residual of records that followed no
  branch) are released with every QID suppressed when there are at least k of them, otherwise
  they are dropped: at most k - 1 records are lost.

Every released group therefore holds at least k records sharing one path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedanon.algorithms.kactus.tree import Condition, Node


@dataclass
class Group:
    """Records released together: they keep what their common path reveals."""

    rows: np.ndarray
    path: tuple[Condition, ...]


@dataclass
class Outcome:
    groups: list[Group]
    dropped: np.ndarray  # record positions lost at the root (fewer than k)
    donated: int  # records moved from complying leaves to their pruned parent, in total


def prune_and_release(
    root: Node, residual: np.ndarray, k: int, rng: np.random.Generator
) -> Outcome:
    """Run phase 2 on `root` (modified in place: it ends as a single leaf)."""
    groups: list[Group] = []
    donated = 0
    for parent in post_order_internal(root):
        donated += _prune(parent, k, rng, groups)
    left = np.concatenate([root.rows, residual]).astype(np.intp)
    if len(left) >= k:
        groups.append(Group(np.sort(left), ()))
        return Outcome(groups, np.empty(0, dtype=np.intp), donated)
    return Outcome(groups, np.sort(left), donated)


def _prune(parent: Node, k: int, rng: np.random.Generator, groups: list[Group]) -> int:
    """Handle one height-1 node; returns the number of donated records."""
    kept: list[tuple[Node, np.ndarray]] = []  # complying child, its k released records
    surplus: list[tuple[Node, np.ndarray]] = []
    failing: list[np.ndarray] = []
    for child in parent.children:
        rows = child.rows
        if len(rows) >= k:
            shuffled = rng.permutation(rows)
            cut = len(rows) - k
            surplus.append((child, shuffled[:cut]))
            kept.append((child, shuffled[cut:]))
        else:
            failing.append(rows)
    pool_size = sum(len(rows) for _, rows in surplus)
    required = gift_size([len(child.rows) for child in parent.children], k)
    gift = np.empty(0, dtype=np.intp)
    if required:
        owner = np.concatenate([np.full(len(r), i) for i, (_, r) in enumerate(surplus)])
        pooled = np.concatenate([r for _, r in surplus])
        order = rng.permutation(pool_size)
        gift = pooled[order[:required]]
        stays = np.zeros(pool_size, dtype=bool)
        stays[order[required:]] = True
        surplus = [(child, pooled[stays & (owner == i)]) for i, (child, _) in enumerate(surplus)]
    extra = dict((id(child), rows) for child, rows in surplus)
    for child, rows in kept:
        released = np.concatenate([rows, extra[id(child)]])
        groups.append(Group(np.sort(released), child.path))
    parent.rows = np.concatenate([*failing, gift]).astype(np.intp)
    parent.children = []
    return len(gift)


def gift_size(sizes: list[int], k: int) -> int:
    """Records a height-1 node's complying children (those of `sizes` at least k) give it:
    k - nui when 0 < nui < k and their surplus holds that many, else 0 (nui: the records of
    the non-complying children). Federated kACTUS decides from global sizes with it."""
    nui = sum(size for size in sizes if size < k)
    pool = sum(size - k for size in sizes if size >= k)
    required = k - nui
    return required if 0 < nui < k and pool >= required else 0


def post_order_internal(root: Node) -> list[Node]:
    """Internal nodes, every node after all of its descendants (iterative)."""
    order: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_leaf:
            continue
        order.append(node)
        stack.extend(node.children)
    order.reverse()
    return order
