"""Python API of (alpha,k)-anonymization: DataFrame in, release and report out.

Mirrors ``fedanon anonymize alpha-k``. Four methods share one entry point so that a user can
compare them on the same data:

* ``global``: one generalized table, full-domain cut chosen by the LKC engine;
* ``local``: one generalized table, top-down local recoding;
* ``lossy-join``: the classes of local recoding released as NSS (raw QIDs + ClassID) and SS
  (ClassID + sensitive value);
* ``anatomy``: Xiao and Tao's l-diverse groups with l = max(k, ceil(1/alpha)), same NSS/SS shape.

Every method returns a `Release`: ``tables == {"table": table}`` for global and local recoding,
``tables == {"nss": nss, "ss": ss}`` for a pair, whose `table` is then NSS. Before it is
returned, the independent checker (`fedanon.models.alpha_k`, no code shared with these
algorithms) verifies the released cells; its verdict is ``report["privacy_check"]``.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Mapping, Sequence
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
from fedanon.algorithms.tds.verified import plain_text
from fedanon.arguments import column_list, optional_seed, require_frame, taxonomy_file
from fedanon.errors import FedanonError
from fedanon.keywords import renamed_keywords
from fedanon.models.alpha_k import check_generalized, check_pair
from fedanon.release import Release
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.tree import Taxonomy
from fedanon.text import text_codes

METHODS = ("global", "local", "lossy-join", "anatomy")


#: A taxonomy file, its path, or the QIDs' trees by column.
TaxonomySpec = TaxonomyFile | str | os.PathLike[str] | Mapping[str, Taxonomy]


@renamed_keywords(sensitive="sensitive_column")
def anonymize_alpha_k(
    df: pd.DataFrame,
    *,
    qids: Sequence[str],
    sensitive_column: str,
    alpha: float | str | Fraction = "0.33",
    k: int = 2,
    method: str = "local",
    taxonomy: TaxonomySpec | None = None,
    seed: int | None = None,
) -> Release:
    """Release `df` under (alpha,k)-anonymity with `method` (see the module docstring).

    `taxonomy` gives the QID trees (needed by every method but Anatomy). Without a seed one is
    drawn from `secrets` and reported, so the run can be repeated. ClassIDs and row orders of
    NSS/SS never depend on the seed.
    """
    if method not in METHODS:
        raise FedanonError(f"unknown method '{method}' (choose from {', '.join(METHODS)})")
    params = AlphaK.of(alpha, k)
    df, qids = require_frame(df), column_list(qids, "qids") or []
    validate_columns(df, qids, sensitive_column)
    codes, values = encode_sensitive(df, sensitive_column)
    require_feasible(codes, params, sensitive_column)
    seed = optional_seed(seed)
    seed = secrets.randbits(63) if seed is None else seed
    began = time.perf_counter()
    tables: dict[str, pd.DataFrame]
    if method == "anatomy":
        groups = anatomy_groups(codes, len(values), params, seed)
        nss, ss = lossy_join_tables(df, qids, sensitive_column, groups)
        tables = {"nss": nss, "ss": ss}
        class_of_row, loss = groups, 0.0
    else:
        trees = _trees(taxonomy, qids, df, dynamic_ok=method == "global")
        if method == "global":
            tables = {"table": plain_text(global_recoding(df, trees, sensitive_column, params))}
            class_of_row = _classes_of(tables["table"], qids)
            loss = _information_loss(tables["table"], qids, trees)
        else:
            atoms = [tree.encode(df[q]) for q, tree in zip(qids, trees, strict=True)]
            partition = top_down_local_recoding(atoms, trees, codes, len(values), params, seed)
            class_of_row = partition.class_of_row
            if method == "local":
                tables = {"table": generalized_table(df, qids, trees, partition)}
                loss = _partition_loss(partition, trees)
            else:
                nss, ss = lossy_join_tables(df, qids, sensitive_column, class_of_row)
                tables = {"nss": nss, "ss": ss}
                loss = 0.0
    report = _report(method, params, seed, codes, class_of_row, loss, qids, sensitive_column)
    report["seconds"] = round(time.perf_counter() - began, 4)
    if "table" in tables:
        verdict = check_generalized(tables["table"], qids, sensitive_column, params.alpha, params.k)
    else:
        verdict = check_pair(tables["nss"], tables["ss"], sensitive_column, params.alpha, params.k)
    if not verdict.ok:
        raise FedanonError(f"the release fails (alpha,k)-anonymity ({method}); nothing returned")
    report["privacy_check"] = verdict.to_dict()
    # Recoding keeps each row in place; NSS/SS are shuffled (fedanon.release.Release).
    in_place = method in ("global", "local")
    return Release(next(iter(tables.values())), report, tables, preserves_order=in_place)


def _trees(
    taxonomy: TaxonomySpec | None,
    qids: list[str],
    df: pd.DataFrame,
    dynamic_ok: bool,
) -> list[Taxonomy]:
    """The QIDs' trees in QID order; dynamic numerical trees only where the engine grows them."""
    if taxonomy is None:
        raise FedanonError("this method needs a taxonomy for the QIDs (--taxonomy)")
    if not isinstance(taxonomy, Mapping):
        taxonomy = taxonomy_file(taxonomy, list(df.columns))
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
    keys = np.column_stack([text_codes(table[q])[0] for q in qids])
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
        codes, uniques = text_codes(table[q])
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
