"""Equal-size items in one buffer: how the union's batches travel and are held.

Every item of a union batch has the same size (records are padded, every layer adds the same
overhead), so a batch needs no per-item framing: one buffer and the item size. Parsing and
serializing a message is then one copy of its bytes instead of one object per ciphertext, and
a batch goes to a worker process as one bytes object. The receiver checks that the buffer cuts
into whole items (`PackingError`) and, where it knows the size the protocol fixes (a hop's
layer size), that the size is that one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    import numpy as np


class PackingError(ValueError):
    """A packed buffer that does not cut into whole items of its stated size."""


@dataclass(frozen=True)
class Packed(Sequence[bytes]):
    """`data` cut into items of `item_size` bytes, in order (an empty batch may have any size)."""

    data: bytes
    item_size: int

    def __post_init__(self) -> None:
        if self.item_size < 0:
            raise PackingError(f"item size {self.item_size} is negative")
        if self.data and (self.item_size == 0 or len(self.data) % self.item_size):
            raise PackingError(
                f"{len(self.data)} packed bytes are not a whole number of {self.item_size}-byte "
                "items"
            )

    @classmethod
    def of(cls, items: Sequence[bytes], item_size: int | None = None) -> Packed:
        """`items` packed; they must all have one size (`item_size` when an empty batch needs
        one)."""
        sizes = {len(item) for item in items}
        if len(sizes) > 1:
            raise PackingError(f"items of {len(sizes)} different sizes cannot be packed")
        size = sizes.pop() if sizes else (item_size or 0)
        return cls(b"".join(items), size)

    @classmethod
    def concat(cls, parts: Sequence[Packed], item_size: int) -> Packed:
        """The batches of `parts`, in order, as one; each must have items of `item_size`."""
        for part in parts:
            if len(part) and part.item_size != item_size:
                raise PackingError(f"items of {part.item_size} bytes, not {item_size}")
        if len(parts) == 1:
            return cls(parts[0].data, item_size)
        return cls(b"".join(part.data for part in parts), item_size)

    def __len__(self) -> int:
        return len(self.data) // self.item_size if self.item_size else 0

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> Packed: ...

    def __getitem__(self, index: int | slice) -> bytes | Packed:
        """One item, or a run of items (step 1) as a batch."""
        size = self.item_size
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("a packed batch slices in steps of 1")
            return Packed(self.data[start * size : max(start, stop) * size], size)
        if not -len(self) <= index < len(self):
            raise IndexError("packed item index out of range")
        start = (index % len(self)) * size
        return self.data[start : start + size]

    def __iter__(self) -> Iterator[bytes]:
        size, data = self.item_size, self.data
        return (data[start : start + size] for start in range(0, len(data), size or 1))

    def items(self) -> list[bytes]:
        """Every item as its own bytes (for the few callers that want them one by one)."""
        return list(self)

    def rows(self) -> np.ndarray:
        """The items as a read-only (items, item_size) array of bytes, without a copy (numpy is
        imported here: reading a job's chunk size must not load it)."""
        import numpy as np

        return np.frombuffer(self.data, dtype=np.uint8).reshape(len(self), self.item_size)

    def permuted(self, order: np.ndarray) -> Packed:
        """The items in the order `order` names (item j of the result is item order[j])."""
        return Packed(self.rows()[order].tobytes(), self.item_size)
