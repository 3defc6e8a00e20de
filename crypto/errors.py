"""Errors raised when a protocol run must abort.

They derive from `FedanonError` so that an aborted session ends as a one-line message (naming the
party or hop at fault) instead of a traceback: a failed authentication or a missing party is a
property of the run, not a bug in the caller.
"""

from __future__ import annotations

from fedanon.errors import FedanonError


class CryptoError(FedanonError):
    """A cryptographic protocol step cannot continue; the session must abort."""


class IntegrityError(CryptoError):
    """Authentication failed: tampered, replayed, misrouted or foreign-session data."""


class MissingPartyError(CryptoError):
    """A party's contribution is absent, so a masked result would be silently wrong."""


class WireFormatError(CryptoError):
    """Bytes received from a peer do not parse as the expected message."""


class IdentityError(CryptoError):
    """A certificate, key file or signature does not establish the claimed identity."""
