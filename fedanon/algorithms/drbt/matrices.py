"""The secret projection matrices R (d x k) of DRBT and the generator that draws them.

Two kinds, as in the thesis (section 2.4.2, Eq. 2.12): ``gaussian`` (RP1, i.i.d. N(0, 1)
entries) and ``sparse`` (RP2, Achlioptas: sqrt(3) x {+1 w.p. 1/6, 0 w.p. 2/3, -1 w.p. 1/6}).
Every column is scaled to unit length, so an unscaled projection shrinks distances by about
sqrt(k/d) (which is what the thesis's stress figures measure).

A column with fewer than two non-zeros is redrawn: such a column copies one original attribute
(up to sign and scale) into the release, or is all zero and cannot be normalized. Only the sparse
kind can produce one; with d = 5 about 46% of its columns would, so the redraw matters on small d.
A matrix whose columns are linearly dependent (rank below min(d, k)) is redrawn whole: at small
d two sparse columns are often equal or opposite (d = 4, k = 2 gave a release with two equal
columns), and the release would then carry fewer dimensions than asked for. Both redraws only
condition the distribution on these events, which for d of a few dozen are vanishingly rare.
"""

from __future__ import annotations

import secrets

import numpy as np

MATRICES = ("gaussian", "sparse")

# Achlioptas's distribution before the column normalization: the sqrt(3) factor gives unit
# variance; it cancels in the normalization but keeps the raw draws as documented.
_SPARSE_VALUES = np.array([np.sqrt(3.0), 0.0, -np.sqrt(3.0)])
_SPARSE_PROBABILITIES = np.array([1 / 6, 2 / 3, 1 / 6])

# A generous bound on redraw rounds: with d >= 2 a sparse column is kept with probability at
# least 1/9 (both entries non-zero), and a matrix has full rank with probability at least 1/2
# once its columns are non-degenerate, so 200 rounds fail with probability below 1e-10.
_MAX_REDRAW_ROUNDS = 200


def secure_rng(seed: int | None = None) -> np.random.Generator:
    """The generator that draws R: PCG64 keyed with 128 bits from `secrets` unless `seed` is given.

    R is the secret of the release, so by default its seed comes from the operating system's
    cryptographic source. PCG64 itself is not a cryptographic generator, but its output (R) is
    never released, only D R, so an attacker cannot observe the stream it would need to recover
    the state. A user `seed` makes the release reproducible; whoever knows it knows R.
    """
    if seed is None:
        seed = secrets.randbits(128)
    if seed < 0:
        raise ValueError("seed must be a non-negative integer")
    return np.random.Generator(np.random.PCG64(seed))


def random_matrix(d: int, k: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    """A d x k projection matrix of the given kind with unit-length columns.

    Columns with fewer than two non-zero entries are redrawn until none is left, and the whole
    matrix is redrawn until its rank is min(d, k).
    """
    if kind not in MATRICES:
        raise ValueError(f"unknown matrix kind '{kind}' (expected one of {', '.join(MATRICES)})")
    if d < 2:
        raise ValueError(f"a projection needs at least 2 attributes, got d = {d}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    for _ in range(_MAX_REDRAW_ROUNDS):
        matrix = _without_degenerate_columns(_draw(d, k, kind, rng), kind, rng)
        if np.linalg.matrix_rank(matrix) == min(d, k):
            return matrix / np.linalg.norm(matrix, axis=0)
    raise RuntimeError("could not draw a projection matrix of full rank")


def _without_degenerate_columns(
    matrix: np.ndarray, kind: str, rng: np.random.Generator
) -> np.ndarray:
    for _ in range(_MAX_REDRAW_ROUNDS):
        degenerate = np.flatnonzero(np.count_nonzero(matrix, axis=0) < 2)
        if degenerate.size == 0:
            return matrix
        matrix[:, degenerate] = _draw(d=matrix.shape[0], k=degenerate.size, kind=kind, rng=rng)
    raise RuntimeError("could not draw a projection matrix without degenerate columns")


def _draw(d: int, k: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    if kind == "gaussian":
        return rng.standard_normal((d, k))
    return rng.choice(_SPARSE_VALUES, size=(d, k), p=_SPARSE_PROBABILITIES)
