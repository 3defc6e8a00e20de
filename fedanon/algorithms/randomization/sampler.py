"""The randomization itself, on codes: pick attributes per record, redraw them from the marginal.

Vectorized over records: one draw picks the attribute(s) of every record at once, then each
attribute's redrawn cells are filled by one batch of draws from its marginal. Draws from a
marginal use integer counts (uniform integer below the total, located in the cumulative counts),
so the probabilities are exactly count / total with no floating-point rounding.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import numpy as np

from fedanon.errors import FedanonError


def make_rng(seed: int | None) -> np.random.Generator:
    """The generator of a release: seeded by the user, or with 128 bits from `secrets`.

    Without a seed nobody (not even the data owner) can replay the draws, which is what keeps
    the link between an original and a released record secret.
    """
    return np.random.default_rng(secrets.randbits(128) if seed is None else seed)


def check_marginals(marginals: Sequence[np.ndarray], qids: Sequence[str]) -> None:
    """Every QID must have at least two values with a positive count to be randomized."""
    for column, counts in zip(qids, marginals, strict=True):
        if np.count_nonzero(counts) < 2:
            raise FedanonError(
                f"QID column '{column}' has only one value: randomizing it "
                "changes nothing (remove it from the QIDs)"
            )


def check_k(k: int, m: int) -> None:
    if not 1 <= k <= m:
        raise FedanonError(f"--attrs k must be between 1 and the number of QIDs ({m}), got {k}")


def draw(counts: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """`size` codes drawn with probability counts[v] / sum(counts)."""
    cumulative = np.cumsum(np.asarray(counts, dtype=np.int64))
    u = rng.integers(0, cumulative[-1], size=size, dtype=np.int64)
    return np.searchsorted(cumulative, u, side="right").astype(np.int32)


def chosen_ra(n: int, p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """RA: an n x m mask with exactly one attribute per record, attribute i w.p. p_i."""
    m = len(p)
    cumulative = np.cumsum(p)
    cumulative[-1] = 1.0
    which = np.minimum(np.searchsorted(cumulative, rng.random(n), side="right"), m - 1)
    mask = np.zeros((n, m), dtype=bool)
    mask[np.arange(n), which] = True
    return mask


def chosen_enhanced(n: int, m: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Enhanced RA(k): an n x m mask with k distinct attributes per record, uniformly.

    The k smallest of m i.i.d. uniform keys form a uniform k-subset.
    """
    keys = rng.random((n, m))
    first = np.argpartition(keys, k - 1, axis=1)[:, :k]
    mask = np.zeros((n, m), dtype=bool)
    np.put_along_axis(mask, first, True, axis=1)
    return mask


def redraw(
    codes: np.ndarray, mask: np.ndarray, marginals: Sequence[np.ndarray], rng: np.random.Generator
) -> np.ndarray:
    """A copy of `codes` whose masked cells are replaced by draws from their column's marginal."""
    out = codes.copy()
    for i, counts in enumerate(marginals):
        rows = np.flatnonzero(mask[:, i])
        out[rows, i] = draw(counts, rows.size, rng)
    return out


def randomize_codes(
    codes: np.ndarray,
    marginals: Sequence[np.ndarray],
    method: str,
    rng: np.random.Generator,
    p: np.ndarray | None = None,
    k: int = 1,
) -> np.ndarray:
    """RA (`p`) or enhanced RA(`k`) on an n x m code matrix with the given marginal counts."""
    n, m = codes.shape
    if method == "ra":
        assert p is not None
        mask = chosen_ra(n, np.asarray(p, dtype=float), rng)
    else:
        mask = chosen_enhanced(n, m, k, rng)
    return redraw(codes, mask, marginals, rng)
