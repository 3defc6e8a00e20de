"""The union's messages in chunks, so that no message grows with the data.

A union phase moves every record of the release (a million records make batches of hundreds of
megabytes), more than one gRPC message may carry. Its items therefore travel in chunks of at
most `chunk_bytes` of items each (at least one item, so an item larger than the bound still
travels, alone), in order, each message naming its chunk index and the number of chunks. The
cut depends only on the items' sizes, which are equal within a batch, so it reveals nothing the
batch's item count does not.
"""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT_CHUNK_BYTES = 4 << 20
MIN_CHUNK_BYTES = 1 << 10
MIB = 1 << 20


def split(items: Sequence[bytes], chunk_bytes: int) -> list[list[bytes]]:
    """Consecutive runs of `items` of at most `chunk_bytes` bytes each (at least one item)."""
    if chunk_bytes < 1:
        raise ValueError("chunk_bytes must be positive")
    chunks: list[list[bytes]] = []
    current: list[bytes] = []
    size = 0
    for item in items:
        if current and size + len(item) > chunk_bytes:
            chunks.append(current)
            current, size = [], 0
        current.append(item)
        size += len(item)
    if current:
        chunks.append(current)
    return chunks
