"""A deliberately naive top-down specialization, used only as a test oracle.

It works on records directly (no partitions, no incremental updates): every iteration it
generalizes the whole table for every candidate and checks LKC over all QID subsets by dict
counting. Slow, obviously correct, and sharing no logic with the engine except the entropy
formula (so float scores tie-break identically).
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from itertools import combinations

import numpy as np

from fedanon.algorithms.tds.scores import info_gain
from fedanon.taxonomy.tree import Taxonomy


def _ancestor_in(tax: Taxonomy, atom: int, cut: set[int]) -> int:
    node = next(
        n
        for n in range(tax.n_nodes)
        if not tax.children[n] and tax.atom_lo[n] <= atom < tax.atom_hi[n]
    )
    while node not in cut:
        node = tax.parent[node]
    return node


def _holds(rows, sens, L, K, C: Fraction) -> bool:
    n_q = len(rows[0]) if rows else 0
    size = min(L, n_q)
    for subset in combinations(range(n_q), size):
        groups: Counter = Counter()
        hits: list[Counter] = [Counter() for _ in sens]
        for r, row in enumerate(rows):
            key = tuple(row[i] for i in subset)
            groups[key] += 1
            for j, s in enumerate(sens):
                hits[j][key] += int(s[r])
        for key, count in groups.items():
            if count < K:
                return False
            if any(Fraction(h[key], count) > C for h in hits):
                return False
    return True


def reference_tds(taxonomies, atoms, classes, sens, L, K, C, score, n_class):
    """Return the list of (attr, node) specializations performed, in order."""
    n_q, n = len(taxonomies), len(classes)
    cut = [{t.root} for t in taxonomies]
    invalid: set[tuple[int, int]] = set()
    order = []

    def generalized(cuts):
        return [
            tuple(_ancestor_in(taxonomies[a], int(atoms[a][r]), cuts[a]) for a in range(n_q))
            for r in range(n)
        ]

    while True:
        current = generalized(cut)
        best, best_key = None, None
        for a in range(n_q):
            for x in sorted(cut[a]):
                if not taxonomies[a].children[x] or (a, x) in invalid:
                    continue
                trial = [set(c) for c in cut]
                trial[a] = (trial[a] - {x}) | set(taxonomies[a].children[x])
                rows = generalized(trial)
                if not _holds(rows, sens, L, K, C):
                    invalid.add((a, x))
                    continue
                kids = taxonomies[a].children[x]
                if score == "infogain":
                    parent = np.zeros(n_class, dtype=np.int64)
                    child = np.zeros((len(kids), n_class), dtype=np.int64)
                    for r in range(n):
                        if current[r][a] == x:
                            parent[classes[r]] += 1
                            child[kids.index(rows[r][a]), classes[r]] += 1
                    value = info_gain(parent, child)
                else:
                    before = Counter(current[r] for r in range(n) if current[r][a] == x)
                    after = Counter(rows[r] for r in range(n) if current[r][a] == x)
                    value = float(
                        sum(v * v for v in before.values()) - sum(v * v for v in after.values())
                    )
                key = (value, -a, -x)
                if best_key is None or key > best_key:
                    best, best_key = (a, x), key
        if best is None:
            return order, cut
        a, x = best
        order.append(best)
        cut[a] = (cut[a] - {x}) | set(taxonomies[a].children[x])
