"""Per-session X25519 public keys, signed with the holder's certificate key.

Both secure protocols that need key agreement (pairwise masks, layered union encryption) start
with every participant publishing a fresh X25519 public key; the leader relays them. A relay that
could swap keys would sit in the middle of every pair, so each key travels in a signed statement:
purpose, session id, the holder's name and the key, signed with the holder's CA-certified key and
shipped with its certificate. Verifiers check the certificate against the federation CA, the
signature, and that purpose and session match their own, so a key cannot be substituted,
attributed to someone else, or replayed from another session or protocol.

A process checks each certificate's chain once (:class:`CheckedCertificates`): a federation's
shares carry the same few certificates in every session and for both purposes, and the path
validation was most of a share's check, n^2 of them per handshake over the federation. What a
verifier relies on is unchanged: the chain to the same CA (the cache is keyed by the exact bytes
of the certificate and of the CA), validity at the time of use (checked again on every use),
the holder's name and role, and the share's own signature, purpose and session on every share.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding

from fedanon.crypto.errors import IdentityError, IntegrityError
from fedanon.crypto.identity import (
    Identity,
    PeerIdentity,
    check_expected,
    verify_certificate,
    verify_signature,
)

# X25519_KEY_BYTES lives in `wire` (the union's workers import that without this module's x509);
# the key-share users import it from here.
from fedanon.crypto.wire import X25519_KEY_BYTES as X25519_KEY_BYTES
from fedanon.crypto.wire import pack_frames, unpack_frames

PAIRWISE_SUM = "pairwise-sum"
ONION_UNION = "onion-union"
PURPOSES = (PAIRWISE_SUM, ONION_UNION)
_STATEMENT_TAG = b"FKS1"
_MESSAGE_TAG = b"FKM1"


@dataclass(frozen=True)
class PeerKey:
    """A verified X25519 public key and whose it is."""

    name: str
    role: str
    public_key: bytes


class CheckedCertificates:
    """Certificates whose chain to a CA this process checked, by the exact bytes of both.

    Only a certificate that passed `verify_certificate` enters; a use after its validity (or
    the CA's) ended checks it again, which refuses it. At most `capacity` entries: a federation
    has a few dozen members; past the bound the cache starts afresh.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self.lock = threading.Lock()
        self.entries: dict[tuple[bytes, bytes], tuple[x509.Certificate, PeerIdentity]] = {}

    def check(
        self, cert_der: bytes, ca_certificate: x509.Certificate
    ) -> tuple[x509.Certificate, PeerIdentity]:
        """The certificate in `cert_der` and whom it names, its chain to `ca_certificate`
        checked (here, or by an earlier call with the same bytes while both are valid)."""
        key = (ca_certificate.public_bytes(Encoding.DER), cert_der)
        with self.lock:
            hit = self.entries.get(key)
        now = dt.datetime.now(dt.UTC)
        if hit is not None and all(
            c.not_valid_before_utc <= now <= c.not_valid_after_utc for c in (hit[0], ca_certificate)
        ):
            return hit
        try:
            certificate = x509.load_der_x509_certificate(cert_der)
        except ValueError:
            raise IntegrityError("a key share carries an unreadable certificate") from None
        checked = (certificate, verify_certificate(certificate, ca_certificate))
        with self.lock:
            if len(self.entries) >= self.capacity:
                self.entries.clear()
            self.entries[key] = checked
        return checked


#: This process's certificates already checked (every verifier of key shares uses it).
CHECKED = CheckedCertificates()


def _statement(purpose: str, session_id: bytes, name: str, public_key: bytes) -> bytes:
    """The signed bytes: tagged so they cannot be confused with any other signed message."""
    return pack_frames(_STATEMENT_TAG, [purpose.encode(), session_id, name.encode(), public_key])


def create_key_share(
    identity: Identity, session_id: bytes, purpose: str
) -> tuple[X25519PrivateKey, bytes]:
    """A fresh X25519 key pair for this session and purpose, and its signed announcement.

    The private key stays with the caller for the session; the bytes go to the leader to relay.
    """
    if purpose not in PURPOSES:
        raise ValueError(f"unknown key purpose {purpose!r}")
    private_key = X25519PrivateKey.generate()
    public_key = private_key.public_key().public_bytes_raw()
    signature = identity.sign(_statement(purpose, session_id, identity.name, public_key))
    message = pack_frames(
        _MESSAGE_TAG,
        [
            purpose.encode(),
            session_id,
            identity.name.encode(),
            public_key,
            identity.certificate.public_bytes(Encoding.DER),
            signature,
        ],
    )
    return private_key, message


def verify_key_share(
    message: bytes,
    ca_certificate: x509.Certificate,
    session_id: bytes,
    purpose: str,
    expected_name: str | None = None,
    expected_role: str | None = None,
) -> PeerKey:
    """Check a relayed key announcement and return the key it vouches for.

    Raises `IdentityError` for a foreign or mismatched certificate or a bad signature, and
    `IntegrityError` for an announcement from another session or for another purpose.
    """
    fields = unpack_frames(_MESSAGE_TAG, message, count=6)
    purpose_b, session_b, name_b, public_key, cert_der, signature = fields
    if purpose_b != purpose.encode():
        raise IntegrityError(f"key share is for {purpose_b!r}, expected {purpose!r}")
    if session_b != session_id:
        raise IntegrityError("key share belongs to another session")
    if len(public_key) != X25519_KEY_BYTES:
        raise IntegrityError("key share does not hold a 32-byte X25519 key")
    name = name_b.decode(errors="replace")
    if expected_name is not None and name != expected_name:
        raise IdentityError(f"key share claims to be from {name!r}, expected {expected_name!r}")
    try:
        certificate, holder = CHECKED.check(cert_der, ca_certificate)
    except IntegrityError:
        raise IntegrityError(f"key share of {name!r} carries an unreadable certificate") from None
    # The claimed name must be the certificate's: a party cannot announce a key as another.
    peer = check_expected(holder, name, expected_role)
    verify_signature(certificate, signature, _statement(purpose, session_id, name, public_key))
    return PeerKey(peer.name, peer.role, public_key)
