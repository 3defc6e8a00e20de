"""Information loss of a released table: the normalized certainty penalty (NCP) per attribute.

The report reads the *released* cells and the job's taxonomies only, never the engine, so it
describes any release (centralized, distributed, or a file handed to ``check``). Definitions
(docs/steward-guide.md, "Information loss"):

* a categorical cell generalized to taxonomy node v costs (leaves(v) - 1) / (leaves(root) - 1):
  0 for a leaf kept as is, 1 for the root ("Any");
* a numeric cell released as the interval [lo-hi) costs (hi - lo) / (max - min) of the
  attribute's domain (the root interval); a raw number costs 0;
* without a taxonomy (suppression methods: kACTUS, Mondrian) a suppressed cell (the marker)
  costs 1, an interval [lo, hi] costs its width over the raw column's range, any other value 0;
* an attribute's NCP is the mean over records, the overall NCP the mean over attributes
  (every QID weighs the same), all in 0..1.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fedanon.errors import FedanonError
from fedanon.tables import Table
from fedanon.taxonomy.tree import Taxonomy
from fedanon.text import Column, text_codes

if TYPE_CHECKING:
    import pandas as pd

_INTERVAL = re.compile(r"^[\[(]\s*(-?[0-9.eE+]+)\s*[-,]\s*(-?[0-9.eE+]+)\s*[\])]$")


@dataclass(frozen=True)
class AttributeLoss:
    """What the release keeps of one QID and what that costs."""

    attribute: str
    kept_values: list[str]
    ncp: float
    suppressed_share: float | None = None


def _cell_penalty_categorical(tax: Taxonomy, value: str) -> float:
    """Penalty of one released categorical value (a taxonomy label or a leaf)."""
    node = _label_index(tax).get(value)
    if node is None:
        raise FedanonError(
            f"released value '{value}' of '{tax.attribute}' is not a node of its taxonomy"
        )
    total = tax.leaves_under(tax.root)
    return 0.0 if total <= 1 else (tax.leaves_under(node) - 1) / (total - 1)


def _label_index(tax: Taxonomy) -> dict[str, int]:
    """Label -> node id; the first (shallowest) node wins if a label repeats."""
    index: dict[str, int] = {}
    for node, label in enumerate(tax.labels):
        index.setdefault(label, node)
    return index


def _cell_penalty_numeric(tax: Taxonomy, value: str) -> float:
    """Penalty of one released numeric value: an interval's width over the domain's, or 0."""
    lo_root, hi_root = tax.node_lo[tax.root], tax.node_hi[tax.root]
    width = hi_root - lo_root
    node = _label_index(tax).get(value)
    if node is not None:
        lo, hi = tax.node_lo[node], tax.node_hi[node]
    elif match := _INTERVAL.match(value.strip()):
        lo, hi = float(match.group(1)), float(match.group(2))
    else:
        try:
            float(value)
        except ValueError:
            raise FedanonError(
                f"released value '{value}' of '{tax.attribute}' is neither a number nor an "
                "interval [lo-hi)"
            ) from None
        return 0.0
    if not np.isfinite(width) or width <= 0:
        return 0.0
    return float(min(1.0, max(0.0, (hi - lo) / width)))


def attribute_loss(
    column: Column, tax: Taxonomy, coded: tuple[np.ndarray, np.ndarray] | None = None
) -> AttributeLoss:
    """NCP of one released QID column: each distinct value is priced once, then weighted.

    `coded` is the column's text codes where the caller has them (fedanon.text.text_codes).
    """
    codes, values = coded if coded is not None else text_codes(column)
    price = _cell_penalty_categorical if tax.kind == "categorical" else _cell_penalty_numeric
    penalties = np.array([price(tax, v) for v in values], dtype=float)
    weights = np.bincount(codes, minlength=len(values)).astype(float)
    ncp = float(penalties @ weights / weights.sum()) if weights.sum() else 0.0
    return AttributeLoss(tax.attribute, sorted(values.tolist()), ncp)


def release_loss(
    release: Table,
    taxonomies: list[Taxonomy],
    coded: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> list[AttributeLoss]:
    """NCP of every QID that has a taxonomy, in QID order."""
    return [
        attribute_loss(release[t.attribute], t, (coded or {}).get(t.attribute)) for t in taxonomies
    ]


def overall_ncp(losses: list[AttributeLoss]) -> float | None:
    """Mean NCP over the attributes (None when no attribute could be priced)."""
    return float(np.mean([x.ncp for x in losses])) if losses else None


def suppression_loss(release: pd.Series, raw: pd.Series, marker: str) -> AttributeLoss:
    """NCP of a QID released by suppression (no taxonomy): marker 1, intervals by width, else 0.

    The interval width is priced against the raw column's range (when the raw column is
    numeric); the suppressed share is the share of released cells equal to the marker.
    """
    import pandas as pd  # the caller's columns are Series: pandas is loaded

    numbers = pd.to_numeric(raw.astype(str), errors="coerce")
    span = float(numbers.max() - numbers.min()) if numbers.notna().all() else float("nan")
    counts = release.astype(str).value_counts(sort=False)

    def price(value: str) -> float:
        if value == marker:
            return 1.0
        match = _INTERVAL.match(value.strip())
        if match and np.isfinite(span) and span > 0:
            width = float(match.group(2)) - float(match.group(1))
            return float(min(1.0, max(0.0, width / span)))
        return 0.0

    penalties = np.array([price(v) for v in counts.index], dtype=float)
    weights = counts.to_numpy(dtype=float)
    total = weights.sum()
    suppressed = float(counts.get(marker, 0)) / total if total else 0.0
    ncp = float(penalties @ weights / total) if total else 0.0
    kept = sorted(v for v in counts.index.tolist() if v != marker)
    return AttributeLoss(str(release.name), kept, ncp, suppressed)
