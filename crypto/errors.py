"""Errors raised when a protocol run must abort.

An aborted session must end as a one-line message (naming the party or hop at fault) instead of
a traceback: a failed authentication or a missing party is a property of the run, not a bug in
the caller. The crypto package imports nothing from the rest of fedanon, so `CryptoError` has its
own root; it carries the same `exit_code` attribute as `fedanon.errors.FedanonError`, and the
callers (the CLI, the party and the leader) treat both as user-facing errors.
"""

from __future__ import annotations


class CryptoError(Exception):
    """A cryptographic protocol step cannot continue; the session must abort."""

    exit_code = 2


class IntegrityError(CryptoError):
    """Authentication failed: tampered, replayed, misrouted or foreign-session data."""


class MissingPartyError(CryptoError):
    """A party's contribution is absent, so a masked result would be silently wrong."""


class WireFormatError(CryptoError):
    """Bytes received from a peer do not parse as the expected message."""


class IdentityError(CryptoError):
    """A certificate, key file or signature does not establish the claimed identity."""
