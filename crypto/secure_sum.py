"""Ring-mode secure sum of uint64 count vectors (mod 2^64).

The initiator (the leader) starts a round with a fresh uniform mask R and sends R to the first
party; each member adds its vector to what it received and forwards the result; the initiator
subtracts R from what the last member returns. Every message a member sees is its predecessor's
running total plus R, which is uniform because R is; the initiator sees only the sum. Where the
last member's answer travels back through the other members (gRPC reply chains), it must be
sealed to the initiator (`fedanon.crypto.sealed_total`): a member that saw both R + its prefix and
R + the total would learn the sum of the later members' vectors.

Known weakness (documented in docs/leakage.md and shown by a test): the two ring neighbours of a
party see the running total before and after it, so together they learn its vector. Use
`fedanon.crypto.pairwise` when that collusion matters.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from fedanon.crypto.masks import fresh_mask
from fedanon.crypto.wire import as_counts, bytes_to_counts, counts_to_bytes


class RingMask:
    """The initiator's secret mask for one round; it can unmask exactly once.

    Reusing a mask across rounds would let any member subtract two views and learn a difference
    of sums, so the mask is dropped after use and a second `unmask` is refused.
    """

    def __init__(self, mask: np.ndarray) -> None:
        self.length = mask.size
        self._mask: np.ndarray | None = mask

    def unmask(self, payload: bytes) -> np.ndarray:
        """Subtract the mask from the last member's payload, giving the global sum."""
        if self._mask is None:
            raise RuntimeError("this ring mask was already used; start a new round")
        total: np.ndarray = bytes_to_counts(payload, self.length) - self._mask
        self._mask = None
        return total


def start_round(length: int) -> tuple[RingMask, bytes]:
    """Initiator role: draw a fresh mask for a vector of `length` counts.

    Returns the mask (kept by the initiator) and the payload to send to the first member.
    """
    mask = fresh_mask(length)
    return RingMask(mask), counts_to_bytes(mask)


def add_vector(payload: bytes, vector: ArrayLike) -> bytes:
    """Member role: add this party's count vector to the running masked total (mod 2^64)."""
    counts = as_counts(vector)
    return counts_to_bytes(bytes_to_counts(payload, counts.size) + counts)
