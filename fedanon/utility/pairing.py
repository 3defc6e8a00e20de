"""Pair the rows of a release with the raw rows they came from, whatever the release's row order.

Utility figures compare a release with its raw table row by row (train/test split, classifier
features). A distributed release comes back in a different row order than the raw table, so
pairing by position would compare unrelated records and report wrong numbers without an error.

Releases by global recoding are a function of the raw rows: each released QID cell is the one
released label of its column that covers the raw value (a taxonomy node above the value, or an
interval around it), and every other released column is copied verbatim. So the release can be
rebuilt in raw order from the raw table and the set of labels the release uses; it is the
release iff the two hold the same rows with the same multiplicities. Rows that agree on every
released column are interchangeable for every utility figure, so no finer pairing is needed.
What cannot be rebuilt (a value covered by no label or by two, a row changed after release, a
release of another table) is refused with a one-line error instead of being paired by guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError, MissingColumnError
from fedanon.taxonomy.tree import Taxonomy
from fedanon.text import as_numbers, as_text

_NUMBER = r"-?(?:inf|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)"
_INTERVAL = re.compile(rf"^\[(?P<lo>{_NUMBER})-(?P<hi>{_NUMBER})(?P<end>[)\]])$")


def release_in_raw_order(
    raw: pd.DataFrame, release: pd.DataFrame, taxonomies: Sequence[Taxonomy], source: str
) -> pd.DataFrame:
    """The release's rows reordered so that row i is the release of raw row i.

    `taxonomies` are the QIDs' trees; `source` names the release in error messages.
    """
    if len(release) != len(raw):
        raise FedanonError(f"{source} has {len(release)} rows, the raw table {len(raw)}")
    missing = [c for c in release.columns if c not in raw.columns]
    if missing:
        raise MissingColumnError(f"{source}: column '{missing[0]}' is not in the raw table")
    labels = {
        tax.attribute: np.asarray(pd.unique(as_text(release[tax.attribute]).astype(object)))
        for tax in taxonomies
        if tax.attribute in release.columns
    }
    rebuilt = generalized_rows(raw, list(release.columns), labels, taxonomies, source)
    released = pd.DataFrame({c: as_text(release[c]).astype(object) for c in release.columns})
    expected = rebuilt.value_counts(dropna=False)
    found = released.value_counts(dropna=False)
    unmatched = int(found.sub(expected, fill_value=0).clip(lower=0).sum())
    if unmatched:
        raise FedanonError(
            f"{source}: {unmatched} of {len(release)} released rows are not the release of any "
            "raw row (cannot pair them; is it the release of this table?)"
        )
    return rebuilt.astype(release.dtypes.to_dict())


def generalized_rows(
    raw: pd.DataFrame,
    columns: Sequence[str],
    labels: Mapping[str, np.ndarray],
    taxonomies: Sequence[Taxonomy],
    source: str,
) -> pd.DataFrame:
    """The raw rows' `columns` as text, each QID of `labels` replaced by the one label of its
    cut that covers the raw value (what a release with those labels prints for the row); a
    value covered by no label or by two is refused. The federated utility protocol
    generalizes each party's rows by the release's cut with it."""
    rebuilt = pd.DataFrame({c: as_text(raw[c]).astype(object) for c in columns})
    for tax in taxonomies:
        if tax.attribute in labels:
            rebuilt[tax.attribute] = _covering_labels(
                tax, raw[tax.attribute], labels[tax.attribute], source
            )
    return rebuilt


def _covering_labels(
    tax: Taxonomy, column: pd.Series, labels: np.ndarray, source: str
) -> np.ndarray:
    """For each raw value, the one label among `labels` that covers it."""
    covers = _cover_masks(tax, column, labels, source)
    count = covers.sum(axis=0)
    bad = np.flatnonzero(count != 1)
    if bad.size:
        row = int(bad[0])
        how = "no released label" if count[row] == 0 else "several released labels"
        raise FedanonError(
            f"{source}: raw value '{as_text(column).iloc[row]}' of column '{tax.attribute}' "
            f"(raw row {row + 1}) is covered by {how}; cannot pair the rows"
        )
    return np.asarray(labels, dtype=object)[covers.argmax(axis=0)]


def _cover_masks(tax: Taxonomy, column: pd.Series, labels: np.ndarray, source: str) -> np.ndarray:
    """Boolean matrix labels x rows: does label i cover the raw value of row j."""
    if tax.kind == "categorical":
        node_of = {label: node for node, label in enumerate(tax.labels)}
        atoms = tax.encode(column)
        masks = []
        for label in labels:
            node = node_of.get(label)
            if node is None:
                raise FedanonError(
                    f"{source}: '{label}' in column '{tax.attribute}' is not in its taxonomy"
                )
            masks.append((atoms >= tax.atom_lo[node]) & (atoms < tax.atom_hi[node]))
        return np.array(masks, dtype=bool).reshape(len(labels), len(column))
    x, bad_row = as_numbers(column)
    if bad_row is not None:
        raise FedanonError(
            f"raw column '{tax.attribute}': value '{as_text(column).iloc[bad_row]}' (row "
            f"{bad_row + 1}) is not a number"
        )
    masks = []
    for label in labels:
        lo, hi, closed = _interval(label, tax.attribute, source)
        masks.append((x >= lo) & ((x <= hi) if closed else (x < hi)))
    return np.array(masks, dtype=bool).reshape(len(labels), len(column))


def _interval(label: str, attribute: str, source: str) -> tuple[float, float, bool]:
    """``[lo-hi)`` / ``[lo-hi]`` (how releases print intervals) or a plain number."""
    match = _INTERVAL.match(label)
    if match:
        return float(match["lo"]), float(match["hi"]), match["end"] == "]"
    try:
        value = float(label)
    except ValueError:
        raise FedanonError(
            f"{source}: '{label}' in numerical column '{attribute}' is neither an interval "
            "[lo-hi) nor a number"
        ) from None
    return value, value, True
