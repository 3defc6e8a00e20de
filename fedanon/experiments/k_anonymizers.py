"""The k-anonymity methods the classification protocol compares, by name.

Each adapter anonymizes a training half and says how the classifier sees the test half:

- ``kactus`` and ``mondrian``: the raw test half (the paper's protocol for kACTUS; Mondrian's
  ranges become midpoints and its suppressed cells the marker category, see
  fedanon/experiments/classification.py).
- ``tds``: our TDS, the k-anonymity preset of LKC-privacy (L = number of QIDs, C = 1) with the
  taxonomy the user gives, numeric QIDs split dynamically as the TDS authors' code does. The
  test half is generalized with the release's final cut ("fitting the test set to the
  classifier", as the kACTUS paper did for TDS), so its QIDs are categorical labels too.

`Prepared` is the fold an adapter hands the protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError

METHODS = ("kactus", "mondrian", "tds")


@dataclass
class Prepared:
    """What a classifier sees for one fold: the released training half, the test half as the
    method presents it, and the columns to treat as numbers."""

    train: pd.DataFrame
    test: pd.DataFrame
    numeric: set[str]
    marker: str | None = "?"  # the suppression marker of the training release (None: none)


# (raw training half, raw test half, k, seed, numeric columns) -> Prepared
Anonymizer = Callable[[pd.DataFrame, pd.DataFrame, int, int, set[str]], Prepared]


def anonymizers(
    names: Sequence[str],
    class_column: str,
    qids: Sequence[str] | None = None,
    taxonomy: str | Path | None = None,
) -> dict[str, Anonymizer]:
    """Adapters for the named methods; ``tds`` needs a taxonomy file."""
    out: dict[str, Anonymizer] = {}
    for name in names:
        if name == "kactus":
            out[name] = partial(_kactus, class_column=class_column, qids=qids)
        elif name == "mondrian":
            out[name] = partial(_mondrian, class_column=class_column, qids=qids)
        elif name == "tds":
            if taxonomy is None:
                raise FedanonError("method tds needs a taxonomy (--taxonomy)")
            out[name] = partial(_tds, class_column=class_column, qids=qids, taxonomy=taxonomy)
        else:
            raise FedanonError(f"unknown method '{name}' (choose from {', '.join(METHODS)})")
    return out


def _kactus(train, test, k, seed, numeric, *, class_column, qids) -> Prepared:
    from fedanon.algorithms.kactus.api import anonymize_kactus

    release = anonymize_kactus(train, class_column=class_column, qids=qids, k=k, seed=seed)
    return Prepared(release.table, test, numeric)


def _mondrian(train, test, k, seed, numeric, *, class_column, qids) -> Prepared:
    from fedanon.algorithms.mondrian.api import anonymize_mondrian

    release = anonymize_mondrian(train, class_column=class_column, qids=qids, k=k, seed=seed)
    return Prepared(release.table, test, numeric)


def _tds(train, test, k, seed, numeric, *, class_column, qids, taxonomy) -> Prepared:
    from fedanon.algorithms.tds.api import anonymize_lkc, build_schema
    from fedanon.schema import LKCParams
    from fedanon.taxonomy.loader import load_taxonomy

    loaded = load_taxonomy(taxonomy, data_columns=list(train.columns))
    names = list(qids) if qids else [c for c in train.columns if c != class_column]
    dynamic = [q for q in names if q in numeric]
    train_text = train.astype(str)
    schema = build_schema(loaded, train_text, names, [], class_column, dynamic)
    release = anonymize_lkc(train_text, schema, LKCParams.of(len(names), k, 1))
    generalized = test.copy()
    for tree in schema.taxonomies:
        cut = release.result.cut[tree.attribute]
        generalized[tree.attribute] = _generalize(tree, cut, test[tree.attribute])
    return Prepared(release.table, generalized, numeric - set(names), marker=None)


def _generalize(tree, cut_labels: list[str], column: pd.Series) -> np.ndarray:
    """Each test value replaced by the label of the cut node that covers it."""
    index = {label: node for node, label in enumerate(tree.labels)}
    nodes = np.array([index[label] for label in cut_labels])
    labels = np.array(cut_labels, dtype=object)
    if tree.kind == "numeric":
        lows = np.array([tree.node_lo[n] for n in nodes], dtype=float)
        order = np.argsort(lows)
        x = pd.to_numeric(column.astype(str), errors="coerce").to_numpy(dtype=float)
        slot = np.clip(np.searchsorted(lows[order], x, side="right") - 1, 0, len(order) - 1)
        return labels[order][slot]
    known = column.astype(str).isin(tree._atom_index)
    out = column.astype(str).to_numpy(dtype=object)
    atoms = tree.encode(column[known])
    table = tree.ancestor_table()[atoms]
    in_cut = np.zeros(tree.n_nodes, dtype=bool)
    in_cut[nodes] = True
    hit = (table >= 0) & in_cut[np.maximum(table, 0)]
    chosen = table[np.arange(len(table)), np.argmax(hit, axis=1)]
    label_of = np.array(tree.labels, dtype=object)
    out[known.to_numpy()] = label_of[chosen]
    return out
