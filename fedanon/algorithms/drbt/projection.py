"""The DRBT transformation of one block of attributes: z-score, then project with a secret R.

These two functions are all a vertically partitioned party needs: it z-scores and projects its
own attribute block with its own matrix and sends only the m x k result. The centralized
release is the same call on the whole table. R is created inside `project_block` and dropped
when it returns, so no caller can write it anywhere by mistake.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedanon.algorithms.drbt.matrices import MATRICES, random_matrix
from fedanon.errors import FedanonError


def zscore(
    block: np.ndarray, names: Sequence[str] | None = None, *, allow_constant: bool = False
) -> np.ndarray:
    """Each column minus its mean, divided by its population standard deviation (ddof = 0).

    A constant column has no standard deviation and is an input error naming the column
    (`names` gives the column names for the message). `allow_constant` maps such a column to
    zeros instead: it contributes nothing to any distance, which is what a reproduction of the
    thesis's Mushroom set (whose veil-type attribute is constant) needs to keep d = 23.
    """
    data = _as_matrix(block, "z-score")
    if data.shape[0] < 2:
        raise FedanonError(f"z-score needs at least 2 rows, got {data.shape[0]}")
    constant = np.ptp(data, axis=0) == 0
    if constant.any() and not allow_constant:
        first = int(np.flatnonzero(constant)[0])
        name = names[first] if names is not None else f"#{first + 1}"
        raise FedanonError(f"column '{name}' is constant: it cannot be z-scored (drop it)")
    std = data.std(axis=0)
    std[constant] = 1.0
    centred = data - data.mean(axis=0)
    centred[:, constant] = 0.0
    return centred / std


def check_projection(d: int, k: int, matrix: str) -> None:
    """Refuse a projection DRBT does not allow: k must satisfy 1 <= k < d.

    k = d is refused because a d x d random matrix is (almost surely) invertible: anyone who
    learns R, or d independent known records, recovers every original value.
    """
    if matrix not in MATRICES:
        raise FedanonError(f"unknown matrix '{matrix}' (expected one of {', '.join(MATRICES)})")
    if d < 2:
        raise FedanonError(f"DRBT needs at least 2 attributes to reduce, got {d}")
    if k < 1:
        raise FedanonError(f"the number of kept dimensions must be at least 1, got {k}")
    if k >= d:
        what = "is a rotation, not a reduction" if k == d else "would add dimensions"
        raise FedanonError(
            f"{k} kept dimensions (n_components) with d = {d} attributes {what}: "
            f"choose fewer than {d}"
        )


def project_block(
    block: np.ndarray, k: int, matrix: str, rng: np.random.Generator, *, rescale: bool = False
) -> np.ndarray:
    """The m x k release D R of an m x d block with a fresh secret d x k matrix R.

    The block should already be z-scored (`zscore`). `rescale` multiplies by sqrt(d/k) so that
    distances keep their scale on average; the thesis did not, so the default does not either.
    """
    data = _as_matrix(block, "projection")
    d = data.shape[1]
    check_projection(d, k, matrix)
    projected = data @ random_matrix(d, k, matrix, rng)
    if rescale:
        projected *= np.sqrt(d / k)
    return projected


def _as_matrix(block: np.ndarray, what: str) -> np.ndarray:
    data = np.asarray(block, dtype=float)
    if data.ndim != 2:
        raise FedanonError(f"{what} needs a 2-D block (rows x attributes), got {data.ndim}-D")
    if data.size == 0:
        raise FedanonError(f"{what} needs a non-empty block, got shape {data.shape}")
    bad = ~np.isfinite(data)
    if bad.any():
        row, column = (int(i) for i in np.argwhere(bad)[0])
        raise FedanonError(f"{what}: non-finite value at row {row + 1}, column #{column + 1}")
    return data
