"""(alpha,k) parameters, validated once, and the class test every method of the package uses.

alpha is kept as an exact fraction so that "share <= alpha" is decided by integer products and a
class exactly at the bound passes whatever the float rounding of 0.33 would say.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError, InfeasibleError, MissingColumnError
from fedanon.text import as_text


@dataclass(frozen=True)
class AlphaK:
    """alpha in (0, 1] (exact) and k >= 1."""

    alpha: Fraction
    k: int

    @classmethod
    def of(cls, alpha: float | str | Fraction, k: int) -> AlphaK:
        """Parse and validate; errors are one-line `FedanonError`s."""
        try:
            a = alpha if isinstance(alpha, Fraction) else Fraction(str(alpha).strip())
        except (ValueError, ZeroDivisionError):
            raise FedanonError(f"alpha must be a number in (0, 1], got {alpha!r}") from None
        if not 0 < a <= 1:
            raise FedanonError(f"alpha must be in (0, 1], got {alpha}")
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise FedanonError(f"k must be an integer >= 1, got {k!r}")
        return cls(a, int(k))

    def satisfied(self, sizes: np.ndarray, max_counts: np.ndarray) -> np.ndarray:
        """Per class: size >= k and the most frequent sensitive value's count <= alpha * size."""
        sizes = np.asarray(sizes, dtype=np.int64)
        max_counts = np.asarray(max_counts, dtype=np.int64)
        return (sizes >= self.k) & (
            max_counts * self.alpha.denominator <= self.alpha.numerator * sizes
        )


def validate_columns(df: pd.DataFrame, qids: list[str], sensitive: str) -> None:
    """The QIDs and the sensitive column exist, are distinct, and the table has rows."""
    if not qids:
        raise FedanonError("no QID columns given")
    if len(set(qids)) != len(qids):
        raise FedanonError("a QID is listed twice")
    if sensitive in qids:
        raise FedanonError(f"sensitive column '{sensitive}' is also a QID")
    for column in [*qids, sensitive]:
        if column not in df.columns:
            raise MissingColumnError(f"the table has no column '{column}'")
    if len(df) == 0:
        raise FedanonError("the table has no rows")


def encode_sensitive(df: pd.DataFrame, sensitive: str) -> tuple[np.ndarray, np.ndarray]:
    """(value code per row, the distinct values) of the sensitive column."""
    codes, values = pd.factorize(as_text(df[sensitive]), sort=True)
    return codes.astype(np.int64), np.asarray(values, dtype=object)


def require_feasible(codes: np.ndarray, params: AlphaK, sensitive: str) -> None:
    """The whole table must itself be one (alpha,k) class, or no release can satisfy the model."""
    n = len(codes)
    counts = np.bincount(codes)
    if n < params.k:
        raise InfeasibleError(
            f"(alpha,k) infeasible: the table has {n} rows, fewer than k={params.k}"
        )
    if not params.satisfied(np.array([n]), np.array([counts.max()]))[0]:
        top = int(np.argmax(counts))
        raise InfeasibleError(
            f"(alpha,k) infeasible: {counts[top]} of {n} rows ({counts[top] / n:.1%}) share one "
            f"value of '{sensitive}', more than alpha={float(params.alpha):g} of the whole table"
        )
