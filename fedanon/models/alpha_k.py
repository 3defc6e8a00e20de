"""Independent check of (alpha,k)-anonymity on a released table or NSS/SS pair.

Shares no code with the algorithms in `fedanon.algorithms.alphak`: it reads only the released
cells. In a generalized table two rows are in one class iff their released QID strings are all
equal; in an NSS/SS pair a class is the set of rows with one ClassID. Every class must have at
least k rows and no sensitive value may make up more than alpha of it, decided with exact
integer arithmetic (alpha as a fraction), so a class exactly at the bound passes. For a pair the
check also demands that both tables give every class the same number of rows (each row of each
table is one original record); a pair that disagrees is not one release.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError, MissingColumnError
from fedanon.models.lkc import cell_text_codes


@dataclass
class AlphaKCheck:
    """The outcome: ok, the extremes found, and the first violating class if any."""

    ok: bool
    alpha: Fraction
    k: int
    rows: int
    classes: int
    min_class_size: int
    max_share: Fraction
    violations: int
    first_violation: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; shares exact as "p/q" next to a float."""
        return {
            "ok": self.ok,
            "alpha": {"fraction": str(self.alpha), "value": float(self.alpha)},
            "k": self.k,
            "rows": self.rows,
            "classes": self.classes,
            "min_class_size": self.min_class_size,
            "max_share": {"fraction": str(self.max_share), "value": float(self.max_share)},
            "violating_classes": self.violations,
            "first_violation": self.first_violation,
        }


def parse_alpha(value: str | float | Fraction) -> Fraction:
    """alpha as an exact fraction in (0, 1]: "0.33", "1/3"; one-line error otherwise."""
    try:
        alpha = value if isinstance(value, Fraction) else Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError):
        raise FedanonError(f"alpha must be a number in (0, 1], got {value!r}") from None
    if not 0 < alpha <= 1:
        raise FedanonError(f"alpha must be in (0, 1], got {value}")
    return alpha


def _parse_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise FedanonError(f"k must be an integer >= 1, got {k!r}")
    return int(k)


def _text(column: pd.Series) -> np.ndarray:
    return column.astype(str).to_numpy(dtype=object)


def _classes(table: pd.DataFrame, qids: list[str]) -> tuple[np.ndarray, list[tuple]]:
    """Each row's class (rows equal on every released QID string; ids in order of first
    occurrence) and each class's QID strings; the columns are read as codes, not cell by cell."""
    if not qids:
        raise FedanonError("no QID columns given")
    coded = [cell_text_codes(table[q]) for q in qids]
    ids = coded[0][0]
    for codes, text in coded[1:]:
        ids = pd.factorize(ids * len(text) + codes)[0].astype(np.int64)
    running = np.maximum.accumulate(ids)
    first = np.flatnonzero(np.r_[True, running[1:] > running[:-1]])[: len(ids)]
    labels = list(zip(*(text[codes[first]] for codes, text in coded), strict=True))
    return ids, labels


def check_generalized(
    table: pd.DataFrame, qids: list[str], sensitive: str, alpha: str | float | Fraction, k: int
) -> AlphaKCheck:
    """Check a generalized table: classes are rows with equal released QID values."""
    alpha, k = parse_alpha(alpha), _parse_k(k)
    _require(table, [*qids, sensitive], "release")
    if sensitive in qids:
        raise FedanonError(f"sensitive column '{sensitive}' is also a QID")
    class_codes, class_labels = _classes(table, qids)
    sensitive_codes = cell_text_codes(table[sensitive])[0]  # values compared as their text
    return _verdict(class_codes, sensitive_codes, alpha, k, qids, class_labels)


def check_pair(
    nss: pd.DataFrame,
    ss: pd.DataFrame,
    sensitive: str,
    alpha: str | float | Fraction,
    k: int,
    class_column: str = "ClassID",
) -> AlphaKCheck:
    """Check an NSS/SS pair: classes are ClassIDs; both tables must agree on every class size."""
    alpha, k = parse_alpha(alpha), _parse_k(k)
    _require(nss, [class_column], "NSS table")
    _require(ss, [class_column, sensitive], "SS table")
    nss_sizes = pd.Series(_text(nss[class_column])).value_counts()
    ss_ids = _text(ss[class_column])
    ss_sizes = pd.Series(ss_ids).value_counts()
    if len(nss) != len(ss) or not nss_sizes.sort_index().equals(ss_sizes.sort_index()):
        raise FedanonError(
            f"NSS ({len(nss)} rows) and SS ({len(ss)} rows) disagree on the classes or their "
            "sizes: each row of each table must be one original record"
        )
    class_codes, class_labels = pd.factorize(ss_ids)
    labels = [(str(c),) for c in class_labels]
    return _verdict(class_codes, _text(ss[sensitive]), alpha, k, [class_column], labels)


def _verdict(
    class_codes: np.ndarray,
    sensitive: np.ndarray,
    alpha: Fraction,
    k: int,
    key_columns: list[str],
    class_labels: list[tuple],
) -> AlphaKCheck:
    """Count every (class, sensitive value) pair and compare with k and alpha exactly."""
    if len(class_codes) == 0:
        raise FedanonError("the release has no rows")
    frame = pd.DataFrame({"c": class_codes, "s": sensitive})
    joint = frame.groupby(["c", "s"], sort=False).size()
    top = joint.groupby(level="c").max()
    sizes = frame.groupby("c").size().reindex(top.index)
    size_arr = sizes.to_numpy(dtype=np.int64)
    top_arr = top.to_numpy(dtype=np.int64)
    bad_k = size_arr < k
    bad_alpha = top_arr * alpha.denominator > alpha.numerator * size_arr
    bad = bad_k | bad_alpha
    shares = [Fraction(int(t), int(s)) for t, s in zip(top_arr, size_arr, strict=True)]
    first_violation = None
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        first_violation = {
            "class": dict(
                zip(key_columns, map(str, class_labels[int(top.index[first])]), strict=True)
            ),
            "size": int(size_arr[first]),
            "largest_share": str(shares[first]),
            "breaks": "k" if bad_k[first] else "alpha",
        }
    return AlphaKCheck(
        ok=not bad.any(),
        alpha=alpha,
        k=k,
        rows=len(class_codes),
        classes=len(size_arr),
        min_class_size=int(size_arr.min()),
        max_share=max(shares),
        violations=int(bad.sum()),
        first_violation=first_violation,
    )


def _require(df: pd.DataFrame, columns: list[str], what: str) -> None:
    for column in columns:
        if column not in df.columns:
            raise MissingColumnError(f"{what} has no column '{column}'")
