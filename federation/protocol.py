"""The version of the party/leader wire protocol.

Bump PROTOCOL_VERSION whenever a message, a field's meaning or the order of a session's calls
changes (protos/fedanon_v1.proto, the codecs in federation/wire.py, a new phase). Both daemons
put it, with the fedanon version, at the head of the handshake fingerprint
(`fedanon.fingerprint.handshake_items`), so a leader and a party built from different releases
refuse each other at OpenSession, naming the item, before any statistic is exchanged.
"""

from __future__ import annotations

PROTOCOL_VERSION = 1
