"""OSBR: release the dissimilarity matrix instead of the data (thesis section 6.4, app. C).

The recipient gets only the lower triangle d(2,1); d(3,1), d(3,2); ... of the m x m matrix, in
that row order (Eq. 2.4), keyed by fictitious object ids. Three dissimilarities, one per kind of
data (section 2.2.3):

- numeric: Euclidean distance (Eq. 2.5) after z-scoring with the *sample* standard deviation,
  which is what reproduces the thesis's worked example (Table 6.3, Eq. 6.2);
- asymmetric binary: the Jaccard coefficient (r + s) / (q + r + s) (Eq. 2.7);
- mixed: the Gower-style average of per-attribute contributions (Eq. 2.8).

Centralized only: Lemma 3 and Caetano's result show that a party knowing some objects'
coordinates, as vertically partitioned parties do, can recover the others from the distances.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedanon.errors import FedanonError

GOWER_KINDS = ("interval", "nominal", "asymmetric")


def euclidean_dissimilarity(data: np.ndarray, names: Sequence[str] | None = None) -> np.ndarray:
    """m x m Euclidean distances between rows z-scored with the sample standard deviation."""
    values = np.asarray(data, dtype=float)
    if values.ndim != 2 or values.shape[0] < 2:
        raise FedanonError(f"OSBR needs a 2-D table with at least 2 rows, got {values.shape}")
    if not np.isfinite(values).all():
        raise FedanonError("OSBR (euclidean): the data contain missing or non-finite values")
    constant = np.flatnonzero(np.ptp(values, axis=0) == 0)
    if constant.size:
        name = names[constant[0]] if names is not None else f"#{constant[0] + 1}"
        raise FedanonError(f"column '{name}' is constant: it cannot be z-scored (drop it)")
    z = (values - values.mean(axis=0)) / values.std(axis=0, ddof=1)
    squared_norms = np.einsum("ij,ij->i", z, z)
    squared = squared_norms[:, None] - 2.0 * (z @ z.T) + squared_norms[None, :]
    np.fill_diagonal(squared, 0.0)
    return np.sqrt(np.maximum(squared, 0.0))


def jaccard_dissimilarity(binary: np.ndarray) -> np.ndarray:
    """m x m Jaccard dissimilarities of 0/1 rows; two all-zero rows are at distance 0."""
    values = np.asarray(binary)
    if values.ndim != 2 or not np.isin(values, (0, 1)).all():
        raise FedanonError("OSBR (jaccard) needs a 2-D table of 0/1 values")
    ones = values.astype(float)
    both = ones @ ones.T  # q
    count = ones.sum(axis=1)
    either = count[:, None] + count[None, :] - both  # q + r + s
    with np.errstate(invalid="ignore", divide="ignore"):
        result = np.where(either > 0, (either - both) / either, 0.0)
    return result


def gower_dissimilarity(columns: Sequence[np.ndarray], kinds: Sequence[str]) -> np.ndarray:
    """m x m mixed-type dissimilarities (Eq. 2.8); NaN or None marks a missing value.

    kinds per column: ``interval`` (|x_i - x_j| / range), ``nominal`` (0 if equal else 1; also
    symmetric binary) or ``asymmetric`` (binary where a 0-0 match carries no information).
    """
    if len(columns) != len(kinds) or not columns:
        raise FedanonError("OSBR (gower) needs one kind per column and at least one column")
    m = len(columns[0])
    total = np.zeros((m, m))
    weight = np.zeros((m, m))
    for index, (column, kind) in enumerate(zip(columns, kinds, strict=True)):
        if len(column) != m:
            raise FedanonError(f"OSBR (gower): column #{index + 1} has {len(column)} rows, not {m}")
        contribution, counted = _gower_term(np.asarray(column, dtype=object), kind, index)
        total += np.where(counted, contribution, 0.0)
        weight += counted
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight > 0, total / weight, 0.0)


def lower_triangle(matrix: np.ndarray) -> np.ndarray:
    """The strictly lower triangle in the thesis's order: d(2,1), d(3,1), d(3,2), d(4,1), ..."""
    square = np.asarray(matrix)
    rows, cols = np.tril_indices(square.shape[0], k=-1)
    return square[rows, cols]


def _gower_term(column: np.ndarray, kind: str, index: int) -> tuple[np.ndarray, np.ndarray]:
    """(d_ij^(f), delta_ij^(f)) for one attribute."""
    present = np.array([not _missing(v) for v in column])
    counted = present[:, None] & present[None, :]
    if kind == "interval":
        values = np.array([float(v) if p else 0.0 for v, p in zip(column, present, strict=True)])
        span = np.ptp(values[present]) if present.any() else 0.0
        difference = np.abs(values[:, None] - values[None, :])
        return (difference / span if span > 0 else np.zeros_like(difference)), counted
    if kind == "nominal":
        return (column[:, None] != column[None, :]).astype(float), counted
    if kind == "asymmetric":
        flags = [float(v) if p else 0.0 for v, p in zip(column, present, strict=True)]
        if not set(flags) <= {0.0, 1.0}:
            raise FedanonError(f"asymmetric binary column #{index + 1} holds values other than 0/1")
        ones = np.array(flags) == 1.0
        both_zero = ~ones[:, None] & ~ones[None, :]
        return (ones[:, None] != ones[None, :]).astype(float), counted & ~both_zero
    raise FedanonError(f"unknown kind '{kind}' for column #{index + 1} ({', '.join(GOWER_KINDS)})")


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))
