"""The fingerprint both sides of a federated job compare before any statistic is exchanged.

Each side lists the job's parameters and schema as comparable text items (one per line, so a
mismatch can be named item by item); the fingerprint is the SHA-256 of those lines. One helper,
because the party and the leader must hash exactly the same bytes for every job kind.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


def fingerprint(items: Sequence[str]) -> str:
    """Hex SHA-256 of the items joined by newlines."""
    return hashlib.sha256("\n".join(items).encode()).hexdigest()
