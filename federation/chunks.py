"""The union's messages in chunks, so that no message grows with the data.

A union phase moves every record of the release (a million records make batches of hundreds of
megabytes), more than one gRPC message may carry. Its items therefore travel in chunks of at
most `chunk_bytes` of items each (at least one item, so an item larger than the bound still
travels, alone), in order, each message naming its chunk index and the number of chunks. A
chunk's items travel packed (`fedanon.crypto.packed`: one bytes field and the item size), so a
chunk also ends where the item size changes (the shuffle mode's last piece of a share). The cut
depends only on the items' sizes, which are public (equal within a layered batch), so it
reveals nothing the batch's item count does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from fedanon.crypto.packed import Packed, PackingError

DEFAULT_CHUNK_BYTES = 4 << 20
MIN_CHUNK_BYTES = 1 << 10
MIB = 1 << 20


def split(items: Sequence[bytes] | Packed, chunk_bytes: int) -> list[Packed]:
    """Consecutive runs of `items` of at most `chunk_bytes` bytes each (at least one item), of
    one item size each, packed."""
    if chunk_bytes < 1:
        raise ValueError("chunk_bytes must be positive")
    if isinstance(items, Packed):
        per = max(1, chunk_bytes // items.item_size) if items.item_size else 1
        return [items[start : start + per] for start in range(0, len(items), per)]
    chunks: list[Packed] = []
    current: list[bytes] = []
    size = 0
    for item in items:
        if current and (size + len(item) > chunk_bytes or len(item) != len(current[0])):
            chunks.append(Packed.of(current))
            current, size = [], 0
        current.append(item)
        size += len(item)
    if current:
        chunks.append(Packed.of(current))
    return chunks


class UnionMessage(Protocol):
    """A UnionRequest or UnionReply (named by its fields: the protos stay unloaded here, so
    reading a job's chunk size imports no protobuf)."""

    @property
    def packed(self) -> bytes: ...

    @property
    def item_size(self) -> int: ...


def unpacked(message: UnionMessage) -> Packed:
    """A union message's items (`packed` cut into `item_size` pieces); `PackingError` (one line)
    when the field is no whole number of items."""
    try:
        return Packed(message.packed, message.item_size)
    except PackingError as exc:
        raise PackingError(f"union {type(message).__name__}: {exc}") from None
