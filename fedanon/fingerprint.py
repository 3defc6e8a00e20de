"""The fingerprint both sides of a federated job compare before any statistic is exchanged.

Each side lists the job's parameters and schema as comparable text items (one per line, so a
mismatch can be named item by item); the fingerprint is the SHA-256 of those lines. One helper,
because the party and the leader must hash exactly the same bytes for every job kind.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import fedanon
from fedanon.federation import protocol


def fingerprint(items: Sequence[str]) -> str:
    """Hex SHA-256 of the items joined by newlines."""
    return hashlib.sha256("\n".join(items).encode()).hexdigest()


def handshake_items(items: Sequence[str]) -> list[str]:
    """The job's `items` headed by the software's versions, as both daemons compare them at
    OpenSession: daemons of different fedanon releases or wire protocols then refuse each other
    with one line naming the version item, instead of failing later on a message one of them
    cannot read. Read at call time (not import time) so that a test can run a party that claims
    another version."""
    return [
        f"fedanon_version:{fedanon.__version__}",
        f"protocol_version:{protocol.PROTOCOL_VERSION}",
        *items,
    ]
