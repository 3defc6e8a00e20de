"""Grouping partition rows over many QID subsets at once.

Validity checks and group statistics both ask the same question: for a batch of rows (partitions,
or partitions x hypothetical children) and a list of QID subsets, sum counts per group, where a
group is (a base key, the row's values on the subset). Looping over subsets in Python costs more
than the arithmetic, so the keys of all subsets are built as one matrix, one row per subset
(values re-coded to small dense ranks, combined mixed-radix, offset per subset). When the exact
key space of a chunk is small (the usual case) the keys are the group ids; otherwise they are
numbered with one hash factorization per chunk.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from fedanon.text import factorize

_LIMIT = 1 << 62
_CHUNK_ELEMENTS = 1 << 22
_DIRECT_BINS_PER_ELEMENT = 8  # above this key-space / element ratio, hash instead


def dense_ranks(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column, re-code values to 0..r-1 in ascending order; return (ranks, radix per column).

    Keys are taxonomy node ids (small non-negative integers), so a presence table and its
    running count rank a column without sorting it. All columns share one table (column c's
    values offset past the ranges of the columns before it): a handful of array operations
    per call instead of a handful per column, which matters for the many small batches of
    a run on a small table.
    """
    ranks = np.empty(keys.shape, dtype=np.int64)
    radix = np.ones(keys.shape[1], dtype=np.int64)
    if keys.shape[0] == 0:
        return ranks, radix
    ends = np.cumsum(keys.max(axis=0).astype(np.int64) + 1)
    starts = ends - (keys.max(axis=0).astype(np.int64) + 1)
    flat = keys + starts[None, :]
    present = np.zeros(int(ends[-1]), dtype=np.int64)
    present[flat.reshape(-1)] = 1
    running = np.cumsum(present)
    before = running[starts] - present[starts]  # distinct values of the earlier columns
    ranks[:] = running[flat] - 1 - before[None, :]
    radix[:] = np.maximum(1, running[ends - 1] - before)
    return ranks, radix


@functools.cache
def subsets_with(n_attrs: int, size: int, required: tuple[int, ...]) -> np.ndarray:
    """All attribute subsets of `size` that contain `required`, as rows of the *other* members.

    Cached (a run asks for the same few lists every step); the array is read-only.
    """
    others = [a for a in range(n_attrs) if a not in required]
    free = size - len(required)
    if free < 0 or free > len(others):
        rows = np.zeros((0, max(free, 0)), dtype=np.int64)
    else:
        combos = list(combinations(others, free))
        rows = np.array(combos, dtype=np.int64).reshape(len(combos), free)
    rows.flags.writeable = False
    return rows


@dataclass
class GroupChunk:
    """One chunk of grouped results: ``ids`` maps each (subset, row) to its group.

    Ids are below ``n_groups`` but need not be dense: on the direct path they are positions in
    the chunk's exact key space, where most positions hold no row (empty groups, never looked
    up through ``ids``). Summing with ``np.bincount(..., minlength=n_groups)`` works either way.
    """

    subset_ids: np.ndarray  # subsets in this chunk (indices into the subset matrix)
    ids: np.ndarray  # shape (len(subset_ids), n_rows), group id per element
    n_groups: int


def group_chunks(
    base: np.ndarray,
    base_radix: int,
    ranks: np.ndarray,
    radix: np.ndarray,
    subset_cols: np.ndarray,
) -> Iterator[GroupChunk]:
    """Group rows by (base, values on subset) for every subset; yields chunks of subsets.

    `base` is a per-row key in ``[0, base_radix)``; `ranks` holds dense per-column ranks (see
    :func:`dense_ranks`) and `subset_cols` one row of column indices per subset. Keys are built
    subset-major (one contiguous row of keys per subset) from the transposed ranks, so every
    step is a contiguous pass rather than a strided column gather.
    """
    n_rows, n_subsets = base.shape[0], subset_cols.shape[0]
    if n_rows == 0 or n_subsets == 0:
        return
    columns = np.ascontiguousarray(ranks.T, dtype=np.int32)  # ranks < rows < 2^31
    width = subset_cols.shape[1]
    uniform = int(radix.max()) if radix.size else 1
    span = int(base_radix) * uniform**width
    per_chunk = max(1, _CHUNK_ELEMENTS // n_rows)
    if span >= _LIMIT:
        per_chunk = 1
    for start in range(0, n_subsets, per_chunk):
        ids = np.arange(start, min(n_subsets, start + per_chunk))
        cols = subset_cols[ids]
        spans = float(base_radix) * np.prod(radix[cols].astype(np.float64), axis=1)
        if spans.sum() <= _DIRECT_BINS_PER_ELEMENT * n_rows * ids.size:
            keys, n_groups = _direct_keys(base, int(base_radix), columns, radix, cols)
            yield GroupChunk(ids, keys, n_groups)
            continue
        if span < _LIMIT:
            key = np.repeat(base[None, :], ids.size, axis=0)
            for j in range(width):
                key = key * uniform + columns[cols[:, j]]
            if ids.size * span < _LIMIT:
                key = key + (np.arange(ids.size, dtype=np.int64) * span)[:, None]
                inverse, uniques = factorize(key.reshape(-1))
                yield GroupChunk(ids, inverse.reshape(ids.size, n_rows), len(uniques))
                continue
            parts = [factorize(key[i]) for i in range(ids.size)]
        else:
            parts = [
                _factorize_wide(base, columns[cols[i]], radix[cols[i]]) for i in range(ids.size)
            ]
        offset, inverse = 0, np.empty((ids.size, n_rows), dtype=np.int64)
        for i, (inv, uniq) in enumerate(parts):
            inverse[i] = inv + offset
            offset += len(uniq)
        yield GroupChunk(ids, inverse, offset)


def _direct_keys(
    base: np.ndarray, base_radix: int, columns: np.ndarray, radix: np.ndarray, cols: np.ndarray
) -> tuple[np.ndarray, int]:
    """Group ids without hashing, for chunks whose exact key space is small.

    Each subset's key is mixed-radix over its own columns' radices (not the widest one) and
    offset past the previous subsets' key spaces, so the ids of a chunk lie in a space only a
    few times its element count: callers sum over that space directly instead of renumbering
    it. Leading columns shared by every subset of the chunk (the attributes every subset must
    contain) are folded into the base once; the space is small, so int32 keys suffice whenever
    it fits, halving the memory each pass moves.
    """
    spans = base_radix * np.prod(radix[cols], axis=1)
    total = int(spans.sum())
    dtype = np.dtype(np.int32 if total < (1 << 31) else np.int64)
    prefix, lead = base.astype(dtype), 0
    while lead < cols.shape[1] and (cols[:, lead] == cols[0, lead]).all():
        prefix *= radix[cols[0, lead]].astype(dtype)
        prefix += columns[cols[0, lead]]
        lead += 1
    keys = np.empty((cols.shape[0], base.shape[0]), dtype=dtype)
    keys[:] = prefix
    for j in range(lead, cols.shape[1]):
        keys *= radix[cols[:, j]].astype(dtype)[:, None]
        keys += columns[cols[:, j]]
    keys += (np.cumsum(spans) - spans).astype(dtype)[:, None]
    return keys, total


def _factorize_wide(
    base: np.ndarray, ranks: np.ndarray, radix: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Combine many columns without overflow by re-factorizing whenever the radix grows large."""
    key, bound = base.astype(np.int64), int(base.max()) + 1 if base.size else 1
    for j in range(ranks.shape[1]):
        if bound * int(radix[j]) >= _LIMIT:
            key, uniq = factorize(key)
            bound = len(uniq)
        key = key * int(radix[j]) + ranks[:, j]
        bound *= int(radix[j])
    return factorize(key)
