"""Cryptographic shuffle.

Unlinkability in the set unions rests on every hop's permutation being unpredictable to everyone
else, so it is a Fisher-Yates shuffle whose indices come from `secrets` (the OS CSPRNG), never
from `random` or numpy.
"""

from __future__ import annotations

import secrets
from typing import TypeVar

T = TypeVar("T")


def secure_shuffle(items: list[T]) -> None:
    """Permute `items` in place uniformly at random (Fisher-Yates driven by `secrets`)."""
    for i in range(len(items) - 1, 0, -1):
        j = secrets.randbelow(i + 1)
        items[i], items[j] = items[j], items[i]
