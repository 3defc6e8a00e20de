"""Python API of (alpha,k)-anonymization: DataFrame in, release and report out.

Mirrors ``fedanon anonymize alpha-k``. Four methods share one entry point so that a user can
compare them on the same data:

* ``global``: one generalized table, full-domain cut chosen by the LKC engine;
* ``local``: one generalized table, top-down local recoding;
* ``lossy-join``: the classes of local recoding released as NSS (raw QIDs + ClassID) and SS
  (ClassID + sensitive value);
* ``anatomy``: Xiao and Tao's l-diverse groups with l = max(k, ceil(1/alpha)), same NSS/SS shape.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from fedanon.algorithms.alphak.anatomy import anatomy_groups, diversity_for
from fedanon.algorithms.alphak.global_recoding import global_recoding
from fedanon.algorithms.alphak.local_recoding import Partition, top_down_local_recoding
from fedanon.algorithms.alphak.params import (
    AlphaK,
    encode_sensitive,
    require_feasible,
    validate_columns,
)
from fedanon.algorithms.alphak.release import (
    CLASS_COLUMN,
    generalized_table,
    lossy_join_tables,
)
from fedanon.errors import FedanonError
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.tree import Taxonomy
from fedanon.text import as_text

METHODS = ("global", "local", "lossy-join", "anatomy")


@dataclass
class AlphaKRelease:
    """A generalized `table` (global, local) or an `nss` + `ss` pair (lossy-join, anatomy)."""

    method: str
    report: dict[str, Any]
    table: pd.DataFrame | None = None
    nss: pd.DataFrame | None = None
    ss: pd.DataFrame | None = None

    def pair(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The NSS and SS tables of a lossy-join or anatomy release."""
        if self.nss is None or self.ss is None:
            raise FedanonError(f"a {self.method} release holds no NSS/SS pair")
        return self.nss, self.ss


def anonymize_alpha_k(
    df: pd.DataFrame,
    qids: Sequence[str],
    sensitive: str,
    alpha: float | str | Fraction = "0.33",
    k: int = 2,
    method: str = "local",
    taxonomy: TaxonomyFile | Mapping[str, Taxonomy] | None = None,
    seed: int | None = None,
) -> AlphaKRelease:
    """Release `df` under (alpha,k)-anonymity with `method` (see the module docstring).

    `taxonomy` gives the QID trees (needed by every method but Anatomy). Without a seed one is
    drawn from `secrets` and reported, so the run can be repeated. ClassIDs and row orders of
    NSS/SS never depend on the seed.
    """
    if method not in METHODS:
        raise FedanonError(f"unknown method '{method}' (choose from {', '.join(METHODS)})")
    params = AlphaK.of(alpha, k)
    qids = list(qids)
    validate_columns(df, qids, sensitive)
    codes, values = encode_sensitive(df, sensitive)
    require_feasible(codes, params, sensitive)
    seed = secrets.randbits(63) if seed is None else int(seed)
    began = time.perf_counter()
    release = AlphaKRelease(method, {})
    if method == "anatomy":
        groups = anatomy_groups(codes, len(values), params, seed)
        release.nss, release.ss = lossy_join_tables(df, qids, sensitive, groups)
        class_of_row, loss = groups, 0.0
    else:
        trees = _trees(taxonomy, qids, df, dynamic_ok=method == "global")
        if method == "global":
            release.table = global_recoding(df, trees, sensitive, params)
            class_of_row = _classes_of(release.table, qids)
            loss = _information_loss(release.table, qids, trees)
        else:
            atoms = [tree.encode(df[q]) for q, tree in zip(qids, trees, strict=True)]
            partition = top_down_local_recoding(atoms, trees, codes, len(values), params, seed)
            class_of_row = partition.class_of_row
            if method == "local":
                release.table = generalized_table(df, qids, trees, partition)
                loss = _partition_loss(partition, trees)
            else:
                release.nss, release.ss = lossy_join_tables(df, qids, sensitive, class_of_row)
                loss = 0.0
    release.report = _report(method, params, seed, codes, class_of_row, loss, qids, sensitive)
    release.report["seconds"] = round(time.perf_counter() - began, 4)
    return release


def _trees(
    taxonomy: TaxonomyFile | Mapping[str, Taxonomy] | None,
    qids: list[str],
    df: pd.DataFrame,
    dynamic_ok: bool,
) -> list[Taxonomy]:
    """The QIDs' trees in QID order; dynamic numerical trees only where the engine grows them."""
    if taxonomy is None:
        raise FedanonError("this method needs a taxonomy for the QIDs (--taxonomy)")
    given = taxonomy.taxonomies if isinstance(taxonomy, TaxonomyFile) else dict(taxonomy)
    dynamic = taxonomy.dynamic_attributes if isinstance(taxonomy, TaxonomyFile) else []
    trees: list[Taxonomy] = []
    for q in qids:
        if q in given:
            trees.append(given[q])
        elif q in dynamic and dynamic_ok:
            trees.append(Taxonomy.dynamic(q, df[q]))
        elif q in dynamic:
            raise FedanonError(
                f"QID '{q}' has a dynamic numerical taxonomy; local recoding needs a given tree"
            )
        else:
            raise FedanonError(f"QID '{q}' has no taxonomy")
    return trees


def _classes_of(table: pd.DataFrame, qids: list[str]) -> np.ndarray:
    """Class index per row of a generalized table: rows with equal released QIDs."""
    keys = np.column_stack([pd.factorize(as_text(table[q].astype(str)))[0] for q in qids])
    return np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1)


def _partition_loss(partition: Partition, trees: list[Taxonomy]) -> float:
    """Loss metric of local recoding's release, from the class nodes (see _information_loss)."""
    sizes = np.bincount(partition.class_of_row, minlength=len(partition.nodes))
    per_class = np.zeros(len(partition.nodes))
    for a, tree in enumerate(trees):
        spans = np.array([tree.leaves_under(n) for n in range(tree.n_nodes)], dtype=float)
        per_class += (spans[partition.nodes[:, a]] - 1) / max(tree.n_atoms - 1, 1)
    return float(np.sum(per_class * sizes) / (sizes.sum() * len(trees)))


def _information_loss(table: pd.DataFrame, qids: list[str], trees: list[Taxonomy]) -> float:
    """Loss metric (Iyengar): mean over QID cells of (leaves covered - 1) / (leaves - 1).

    0 for a raw table, 1 when every value is generalized to its root.
    """
    total = 0.0
    for q, tree in zip(qids, trees, strict=True):
        span = {label: tree.leaves_under(n) for n, label in enumerate(tree.labels)}
        labels = as_text(table[q].astype(str))
        codes, uniques = pd.factorize(labels)
        cost = np.array([(span.get(u, 1) - 1) / max(tree.n_atoms - 1, 1) for u in uniques])
        total += float(cost[codes].mean())
    return total / len(qids)


def _report(
    method: str,
    params: AlphaK,
    seed: int,
    codes: np.ndarray,
    class_of_row: np.ndarray,
    loss: float,
    qids: list[str],
    sensitive: str,
) -> dict[str, Any]:
    """Classes, smallest class, largest share of one sensitive value in a class, loss."""
    n_classes = int(class_of_row.max()) + 1
    n_values = int(codes.max()) + 1
    joint = np.bincount(class_of_row * n_values + codes, minlength=n_classes * n_values)
    joint = joint.reshape(n_classes, n_values)
    sizes = joint.sum(axis=1)
    shares = joint.max(axis=1) / sizes
    report: dict[str, Any] = {
        "method": method,
        "alpha": str(params.alpha),
        "alpha_float": float(params.alpha),
        "k": params.k,
        "qids": qids,
        "sensitive": sensitive,
        "seed": seed,
        "rows": len(codes),
        "classes": n_classes,
        "min_class_size": int(sizes.min()),
        "mean_class_size": round(float(sizes.mean()), 4),
        "max_share": round(float(shares.max()), 6),
        "information_loss": round(loss, 6),
    }
    if method in ("lossy-join", "anatomy"):
        report["class_column"] = CLASS_COLUMN
    if method == "anatomy":
        report["l"] = diversity_for(params)
    return report
