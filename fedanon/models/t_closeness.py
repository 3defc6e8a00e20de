"""Independent t-closeness checker (Li, Li and Venkatasubramanian, ICDE 2007).

Every equivalence class's distribution P of the sensitive value must be within Earth Mover's
Distance t of the whole table's distribution Q (docs/checker.md). Two ground distances:

* equal distance (categorical values, any two differ by 1): EMD = 1/2 * sum_i |p_i - q_i|;
* ordered distance (numbers, values v_1 < ... < v_m of the table, |i - j| / (m - 1) apart):
  EMD = 1/(m - 1) * sum_i |sum_{j <= i} (p_j - q_j)|.

By default a sensitive column whose every cell is a finite number is ordered, anything else
categorical, as pycanon decides by column type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError
from fedanon.models.l_diversity import class_counts, class_key

DISTANCES = ("equal", "ordered")
_TOLERANCE = 1e-12  # float slack when comparing the achieved t with the bound


@dataclass(frozen=True)
class TClosenessResult:
    """Outcome of a check: the bound, the largest EMD of any class and that class."""

    ok: bool
    distance: str
    t: float
    achieved: float | None
    rows: int
    classes: int
    violating_classes: int
    worst_class: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "model": "t-closeness",
            "distance": self.distance,
            "t": self.t,
            "achieved_t": self.achieved,
            "rows": self.rows,
            "classes": self.classes,
            "violating_classes": self.violating_classes,
            "worst_class": self.worst_class,
        }


def check_t_closeness(
    df: pd.DataFrame,
    qids: Sequence[str],
    sensitive: str,
    t: float,
    distance: str | None = None,
) -> TClosenessResult:
    """Check that every class of `qids` is within EMD `t` of the table's `sensitive` values."""
    if distance is not None and distance not in DISTANCES:
        raise FedanonError(f"distance must be one of {', '.join(DISTANCES)}, got {distance!r}")
    if isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t <= 1:
        raise FedanonError(f"t must be a number in [0, 1], got {t!r}")
    counts = class_counts(df, qids, sensitive)
    if counts.empty:
        return TClosenessResult(True, distance or "equal", t, None, 0, 0, 0)
    numbers = pd.to_numeric(pd.Series(counts.columns, dtype=object), errors="coerce")
    numeric = bool(np.isfinite(numbers.to_numpy(dtype=float)).all())
    if distance is None:
        distance = "ordered" if numeric else "equal"
    elif distance == "ordered" and not numeric:
        raise FedanonError(f"ordered distance needs numbers in '{sensitive}'")
    if distance == "ordered":
        counts = counts.iloc[:, np.argsort(numbers.to_numpy(dtype=float), kind="stable")]
    matrix = counts.to_numpy(dtype=float)
    p = matrix / matrix.sum(axis=1, keepdims=True)
    q = matrix.sum(axis=0) / matrix.sum()
    m = matrix.shape[1]
    if distance == "equal":
        emd = 0.5 * np.abs(p - q).sum(axis=1)
    elif m == 1:
        emd = np.zeros(len(p))
    else:
        emd = np.abs(np.cumsum(p - q, axis=1)).sum(axis=1) / (m - 1)
    bad = emd > t + _TOLERANCE
    worst = int(np.argmax(emd))
    return TClosenessResult(
        ok=not bad.any(),
        distance=distance,
        t=t,
        achieved=float(emd[worst]),
        rows=len(df),
        classes=len(counts),
        violating_classes=int(bad.sum()),
        worst_class=class_key(counts, worst, qids),
    )
