"""The version of the party/leader wire protocol, and the handshake items that carry it.

Bump PROTOCOL_VERSION whenever a message, a field's meaning or the order of a session's calls
changes (protos/fedanon_v1.proto, the codecs in federation/wire.py, a new phase). Both daemons
put it, with the fedanon version, at the head of the handshake fingerprint (`handshake_items`),
so a leader and a party built from different releases refuse each other at OpenSession, naming
the item, before any statistic is exchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import fedanon

PROTOCOL_VERSION = 2  # 2: packed union items, Rejoin, exclusion, evaluate, OpenSession versions


def handshake_items(items: Sequence[str]) -> list[str]:
    """The job's fingerprint `items` headed by the software's versions, as both daemons compare
    them at OpenSession: daemons of different fedanon releases or wire protocols then refuse
    each other with one line naming the version item, instead of failing later on a message
    one of them cannot read. Read at call time (not import time) so that a test can run a party
    that claims another version."""
    return [
        f"fedanon_version:{fedanon.__version__}",
        f"protocol_version:{PROTOCOL_VERSION}",
        *items,
    ]
