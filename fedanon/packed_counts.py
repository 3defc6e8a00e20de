"""Counts packed several per uint64 word, so a secure sum moves fewer words.

Federated C4.5 and kACTUS bound every count by the record count N, so a count fits bits(N) bits
and ``64 // bits`` of them share a word. Summing packed words mod 2^64 (either secure sum) adds
field by field without a carry as long as every field's total stays below 2^bits. Plain numpy
arithmetic, in the core's base layer: the classification cores (leader and party side) pack and
unpack their counts themselves, and the secure sum never needs to know.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

#: The widest field worth packing: wider fields leave one per word, as unpacked.
MAX_PACKED_BITS = 32


def fields_per_word(bits: int) -> int:
    """How many `bits`-bit fields share one uint64 word (1: `bits` 0 or wider than 32)."""
    if not 0 <= bits <= 64:
        raise ValueError(f"a count field of {bits} bits does not fit a uint64 word")
    return 1 if bits == 0 or bits > MAX_PACKED_BITS else 64 // bits


def packed_length(length: int, bits: int) -> int:
    """Words of a `length`-count vector packed in `bits`-bit fields."""
    per = fields_per_word(bits)
    return -(-length // per)


#: Little-endian unsigned dtypes of the field widths a word splits into by a plain view.
_VIEWS: dict[int, np.dtype[Any]] = {8: np.dtype("<u1"), 16: np.dtype("<u2"), 32: np.dtype("<u4")}


def field_width(bits: int) -> int:
    """The bits each packed field takes in its word: the widest that keeps
    ``fields_per_word(bits)`` fields to the word (Adult's 15-bit counts: 16, four a word),
    so the common widths of 8, 16 and 32 bits pack and unpack as a view of the words."""
    return 64 // fields_per_word(bits)


def pack_fields(vector: ArrayLike, bits: int) -> np.ndarray:
    """Several counts per uint64 word, ``field_width(bits)`` bits each (counts i*f .. i*f+f-1
    in word i, count i*f in the lowest field).

    Why this sums exactly: the words add mod 2^64 like any vector, and as long as every
    field's *total* over the parties stays below 2^bits no carry crosses a field, so the
    summed words unpack to the summed counts. The caller picks `bits` from a bound on every
    total (federated C4.5: the global record count); a count that does not fit alone is
    refused here.
    """
    per = fields_per_word(bits)
    counts = np.asarray(vector)
    if per == 1:
        return counts  # one count per word: the sum checks it as it checks any count vector
    if counts.ndim != 1 or not np.issubdtype(counts.dtype, np.integer):
        raise TypeError(
            f"packed counts are a 1-D integer vector, got {counts.dtype} {counts.shape}"
        )
    if counts.size and int(counts.min()) < 0:
        raise ValueError("count vectors hold non-negative integers")
    if counts.size and int(counts.max()) >> bits:
        raise ValueError(f"a count does not fit {bits} bits")
    width = field_width(bits)
    view = _VIEWS.get(width)
    padded: np.ndarray = np.zeros(
        packed_length(counts.size, bits) * per, dtype=np.uint64 if view is None else view
    )
    padded[: counts.size] = counts  # every count fits its field (checked above)
    if view is not None:  # the fields laid out little-endian are the words' bytes
        packed: np.ndarray = padded.view("<u8").astype(np.uint64, copy=False)
        return packed
    fields = padded.reshape(-1, per)
    words: np.ndarray = fields[:, 0].copy()
    for i in range(1, per):  # a strided pass per field: numpy's reduce over a short axis is slow
        words |= fields[:, i] << np.uint64(i * width)
    return words


def unpack_fields(words: np.ndarray, bits: int, length: int) -> np.ndarray:
    """The `length` counts `pack_fields` (or a sum of packed vectors) holds, as uint64."""
    per = fields_per_word(bits)
    if words.size != packed_length(length, bits):
        raise ValueError(f"{words.size} words do not hold {length} counts of {bits} bits")
    if per == 1:
        return words
    width = field_width(bits)
    view = _VIEWS.get(width)
    if view is not None:
        little = np.ascontiguousarray(words, dtype="<u8")
        cells: np.ndarray = little.view(view)[:length].astype(np.uint64)
        return cells
    fields = np.empty((words.size, per), dtype=np.uint64)
    low = np.uint64((1 << width) - 1)
    for i in range(per):
        fields[:, i] = (words >> np.uint64(i * width)) & low
    counts: np.ndarray = fields.reshape(-1)[:length]
    return counts
