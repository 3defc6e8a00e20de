"""Phase 1 of kACTUS: induce the tree and place every record in a leaf by evaluating its path.

The tree is the project's C4.5-style inducer (gain ratio, multiway equality tests on categorical
QIDs, binary thresholds on numeric ones, pessimistic pruning) fitted on the QIDs and the class
only, with C4.5's minimum number of records per branch (-m) set to k: a node is split only when
at least two of its branches hold k records, so most leaves already comply with k and phase 2
has little to prune.

The inducer does not accept missing values, so it is fitted on the records whose QIDs are all
present. Leaf membership is then decided for every record by evaluating the tests on its path;
a record with a missing value on a tested attribute, or with a value the tree has no branch for,
follows no branch and goes to the root residual.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fedanon.algorithms.tabular import QidColumn
from fedanon.utility.c45 import C45, TreeNode


@dataclass(frozen=True)
class Condition:
    """One test on a path: ``feature = value`` (equality) or ``feature <= / > threshold``."""

    feature: str
    equality: bool
    value: object  # the category for equality tests, the threshold otherwise
    above: bool = False  # inequality tests: True for ``> threshold``


@dataclass
class Node:
    """A node of the tree phase 2 works on: a leaf holds the positions of its records."""

    path: tuple[Condition, ...] = ()
    children: list[Node] = field(default_factory=list)
    rows: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.intp))

    @property
    def is_leaf(self) -> bool:
        return not self.children


def induce(columns: Sequence[QidColumn], labels: pd.Series, k: int, prune: bool = True) -> TreeNode:
    """Fit the C4.5-style tree with at least k records per branch on the complete records."""
    complete = ~np.logical_or.reduce([c.missing for c in columns])
    features = pd.DataFrame(
        {c.name: (c.values if c.numeric else c.codes)[complete] for c in columns}
    )
    numeric = [c.name for c in columns if c.numeric]
    model = C45(min_leaf=k, prune=prune).fit(
        features, labels[complete].reset_index(drop=True), numeric=numeric
    )
    return model.tree()


def place_records(tree: TreeNode, columns: Sequence[QidColumn]) -> tuple[Node, np.ndarray]:
    """The tree with every record in the leaf its path leads to, and the root residual.

    Categorical tests were fitted on category codes; the returned paths name the categories.
    """
    by_name = {c.name: c for c in columns}
    n = len(columns[0].missing)
    root = Node()
    residual: list[np.ndarray] = []
    stack: list[tuple[TreeNode, Node, np.ndarray]] = [(tree, root, np.arange(n))]
    while stack:
        source, node, rows = stack.pop()
        if source.is_leaf:
            node.rows = rows
            continue
        column = by_name[str(source.feature)]
        if source.numeric:
            x = column.values[rows]
            known = ~np.isnan(x)
            residual.append(rows[~known])
            above = x > source.threshold
            for side in (False, True):
                child = Node((*node.path, Condition(column.name, False, source.threshold, side)))
                node.children.append(child)
                stack.append((source.children[side], child, rows[known & (above == side)]))
            continue
        # One stable sort routes the rows of a many-valued test at once.
        keys = np.array(list(source.children), dtype=np.intp)  # category codes
        lookup = np.full(len(column.categories), -1, dtype=np.intp)
        lookup[keys] = np.arange(len(keys))
        codes = column.codes[rows]
        slot = np.where(codes >= 0, lookup[np.maximum(codes, 0)], -1)
        residual.append(rows[slot < 0])
        order = np.argsort(slot, kind="stable")
        bounds = np.searchsorted(slot[order], np.arange(len(keys) + 1))
        for i, child_source in enumerate(source.children.values()):
            value = column.categories[keys[i]]
            child = Node((*node.path, Condition(column.name, True, value)))
            node.children.append(child)
            stack.append((child_source, child, rows[order[bounds[i] : bounds[i + 1]]]))
    leftover = np.concatenate(residual) if residual else np.empty(0, dtype=np.intp)
    return root, np.sort(leftover)
