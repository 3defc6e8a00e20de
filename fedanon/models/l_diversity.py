"""Independent l-diversity checker (Machanavajjhala et al.): distinct and entropy l-diversity.

An equivalence class is the set of released rows with equal QID cells (compared as text, as
every fedanon checker does; a missing cell is the empty string). A release is

* distinct l-diverse when every class holds at least l distinct sensitive values;
* entropy l-diverse when every class's entropy ``-sum p(s) log p(s)`` over its sensitive
  values is at least ``log l``, i.e. ``exp(entropy) >= l``.

The checker reports the achieved l (the smallest distinct count, or the smallest
``exp(entropy)``) and the worst class, the figures pycanon computes (docs/checker.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError, MissingColumnError

MEASURES = ("distinct", "entropy")
_TOLERANCE = 1e-9  # float slack of exp(log l): a class uniform over l values has entropy log l


@dataclass(frozen=True)
class LDiversityResult:
    """Outcome of a check: the required and achieved l, and the class that achieves it."""

    ok: bool
    measure: str
    l: float  # noqa: E741 (the model is named by its letter)
    achieved: float | None
    rows: int
    classes: int
    violating_classes: int
    worst_class: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "model": f"{self.measure} l-diversity",
            "l": self.l,
            "achieved_l": self.achieved,
            "rows": self.rows,
            "classes": self.classes,
            "violating_classes": self.violating_classes,
            "worst_class": self.worst_class,
        }


def class_counts(df: pd.DataFrame, qids: Sequence[str], sensitive: str) -> pd.DataFrame:
    """Rows: equivalence classes (QID text tuples); columns: sensitive values; cells: counts."""
    names = list(qids)
    if not names:
        raise FedanonError("no QID columns to check")
    if len(set(names)) != len(names):
        raise FedanonError("a QID column is listed twice")
    if sensitive in names:
        raise FedanonError(f"the sensitive column '{sensitive}' is also a QID")
    for column in [*names, sensitive]:
        if column not in df.columns:
            raise MissingColumnError(f"the release has no column '{column}'")
    text = pd.DataFrame(
        {c: df[c].astype(object).where(df[c].notna(), "").astype(str) for c in [*names, sensitive]}
    )
    sizes = text.groupby([*names, sensitive], sort=False, dropna=False).size()
    return sizes.unstack(sensitive, fill_value=0)


def class_key(counts: pd.DataFrame, row: int, qids: Sequence[str]) -> dict[str, str]:
    """The QID cells of class number `row` of :func:`class_counts`."""
    key = counts.index[row]
    values = key if isinstance(key, tuple) else (key,)
    return dict(zip(qids, (str(v) for v in values), strict=True))


def check_l_diversity(
    df: pd.DataFrame,
    qids: Sequence[str],
    sensitive: str,
    l: float,  # noqa: E741 (the model is named by its letter)
    measure: str = "distinct",
) -> LDiversityResult:
    """Check distinct or entropy l-diversity of `sensitive` in every class of `qids`."""
    if measure not in MEASURES:
        raise FedanonError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    if isinstance(l, bool) or not isinstance(l, int | float) or not math.isfinite(l) or l < 1:
        raise FedanonError(f"l must be a number >= 1, got {l!r}")
    counts = class_counts(df, qids, sensitive)
    if counts.empty:
        return LDiversityResult(True, measure, l, None, 0, 0, 0)
    matrix = counts.to_numpy(dtype=float)
    if measure == "distinct":
        per_class = (matrix > 0).sum(axis=1).astype(float)
        bad = per_class < l
    else:
        shares = matrix / matrix.sum(axis=1, keepdims=True)
        logs = np.log(np.where(shares > 0, shares, 1.0))
        entropy = -(shares * logs).sum(axis=1)
        per_class = np.exp(entropy)
        bad = entropy < math.log(l) - _TOLERANCE
    worst = int(np.argmin(per_class))
    return LDiversityResult(
        ok=not bad.any(),
        measure=measure,
        l=l,
        achieved=float(per_class[worst]),
        rows=len(df),
        classes=len(counts),
        violating_classes=int(bad.sum()),
        worst_class=class_key(counts, worst, qids),
    )
