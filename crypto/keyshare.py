"""Per-session X25519 public keys, signed with the holder's certificate key.

Both secure protocols that need key agreement (pairwise masks, layered union encryption) start
with every participant publishing a fresh X25519 public key; the leader relays them. A relay that
could swap keys would sit in the middle of every pair, so each key travels in a signed statement:
purpose, session id, the holder's name and the key, signed with the holder's CA-certified key and
shipped with its certificate. Verifiers check the certificate against the federation CA, the
signature, and that purpose and session match their own, so a key cannot be substituted,
attributed to someone else, or replayed from another session or protocol.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding

from fedanon.crypto.errors import IdentityError, IntegrityError
from fedanon.crypto.identity import Identity, verify_certificate, verify_signature

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
    try:
        certificate = x509.load_der_x509_certificate(cert_der)
    except ValueError:
        raise IntegrityError(f"key share of {name!r} carries an unreadable certificate") from None
    if expected_name is not None and name != expected_name:
        raise IdentityError(f"key share claims to be from {name!r}, expected {expected_name!r}")
    # The claimed name must be the certificate's: a party cannot announce a key as another.
    peer = verify_certificate(certificate, ca_certificate, name, expected_role)
    verify_signature(certificate, signature, _statement(purpose, session_id, name, public_key))
    return PeerKey(peer.name, peer.role, public_key)
