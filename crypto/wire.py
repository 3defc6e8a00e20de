"""Byte encodings shared by the crypto messages.

Everything a protocol step emits is plain bytes so that any transport can carry it. Two shapes
cover all messages: a vector of counts (little-endian uint64, fixed width so a length mismatch is
detectable) and a tagged list of length-prefixed frames. Parsing is field by field and strict:
trailing bytes, short frames or a wrong tag are errors, never guesses. No pickle anywhere.

numpy is imported by the count-vector functions, not with the module: the layered union's
worker processes import this module for its frames and never handle a count vector (their fork
server boots faster without numpy).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from fedanon.crypto.errors import WireFormatError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike

#: A count's encoding: little-endian uint64 (a numpy dtype string), 8 bytes.
COUNT_DTYPE = "<u8"
COUNT_BYTES = 8
#: An X25519 public key's size on the wire (key shares, the union's ephemeral keys).
X25519_KEY_BYTES = 32
TAG_BYTES = 4
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")


def as_counts(vector: ArrayLike) -> np.ndarray:
    """Validate a 1-D vector of non-negative integers and return it as uint64.

    Negative or non-integer input is refused rather than wrapped: a count vector that silently
    became 2^64-1 would corrupt every global sum it enters.
    """
    import numpy as np

    arr = np.asarray(vector)
    if arr.ndim != 1:
        raise ValueError(f"count vectors are 1-D, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint64)
    if arr.dtype == np.uint64:
        return arr
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"count vectors hold integers, got dtype {arr.dtype}")
    if arr.min() < 0:
        raise ValueError("count vectors hold non-negative integers")
    return arr.astype(np.uint64)


def counts_to_bytes(vector: np.ndarray) -> bytes:
    """Encode a uint64 vector as little-endian bytes (8 per element)."""
    import numpy as np

    return np.ascontiguousarray(vector, dtype=COUNT_DTYPE).tobytes()


def bytes_to_counts(data: bytes, length: int | None = None) -> np.ndarray:
    """Decode little-endian uint64 bytes; `length`, when given, must match exactly."""
    import numpy as np

    if len(data) % COUNT_BYTES:
        raise WireFormatError(f"count vector of {len(data)} bytes is not a whole number of uint64")
    vector = np.frombuffer(data, dtype=COUNT_DTYPE).astype(np.uint64)
    if length is not None and vector.size != length:
        raise WireFormatError(f"count vector has {vector.size} elements, expected {length}")
    return vector


def u32(value: int) -> bytes:
    """Big-endian unsigned 32-bit field."""
    return _U32.pack(value)


def u64(value: int) -> bytes:
    """Big-endian unsigned 64-bit field (round numbers, lengths)."""
    return _U64.pack(value)


def read_u64(field: bytes) -> int:
    """Inverse of `u64`, refusing fields of the wrong width."""
    if len(field) != _U64.size:
        raise WireFormatError(f"expected an 8-byte integer field, got {len(field)} bytes")
    value: int = _U64.unpack(field)[0]
    return value


def pack_frames(tag: bytes, items: Iterable[bytes]) -> bytes:
    """Tagged list of byte strings: tag, u32 count, then u32 length + bytes per item.

    The 4-byte tag names the message type and version, so one message can never be parsed as
    another.
    """
    if len(tag) != TAG_BYTES:
        raise ValueError("frame tags are 4 bytes")
    items = list(items)
    parts = [tag, _U32.pack(len(items))]
    for item in items:
        parts.append(_U32.pack(len(item)))
        parts.append(item)
    return b"".join(parts)


def unpack_frames(tag: bytes, data: bytes, count: int | None = None) -> list[bytes]:
    """Parse `pack_frames` output; `count`, when given, is the exact number of items expected."""
    view = memoryview(data)
    if len(view) < TAG_BYTES + _U32.size or bytes(view[:TAG_BYTES]) != tag:
        raise WireFormatError(f"not a {tag.decode(errors='replace')} message")
    (n_items,) = _U32.unpack_from(view, TAG_BYTES)
    if count is not None and n_items != count:
        raise WireFormatError(f"{tag.decode()} message has {n_items} fields, expected {count}")
    pos = TAG_BYTES + _U32.size
    items: list[bytes] = []
    for _ in range(n_items):
        if pos + _U32.size > len(view):
            raise WireFormatError(f"{tag.decode()} message truncated")
        (size,) = _U32.unpack_from(view, pos)
        pos += _U32.size
        if pos + size > len(view):
            raise WireFormatError(f"{tag.decode()} message truncated")
        items.append(bytes(view[pos : pos + size]))
        pos += size
    if pos != len(view):
        raise WireFormatError(f"{tag.decode()} message has {len(view) - pos} trailing bytes")
    return items


def each_once(records: Iterable[bytes], encode: Callable[[bytes], bytes]) -> list[bytes]:
    """`encode` of every record, in order, computed once per distinct record: a generalized
    release repeats a few hundred distinct records over tens of thousands of rows, and the
    unions' per-record encodings (padding, header) were a fifth of an owner's seal."""
    made: dict[bytes, bytes] = {}
    encoded = []
    for record in records:
        item = made.get(record)
        if item is None:
            item = made[record] = encode(record)
        encoded.append(item)
    return encoded
