"""The ring sum's masked total, sealed by the last party so that only the leader can read it.

In the ring the last party's answer travels back through every party's reply. In clear, party i
would subtract what it forwarded (R + x1 + ... + xi) from what came back (R + x1 + ... + xn) and
learn x(i+1) + ... + xn; the second-to-last party would learn the last party's exact vector.
So the last party seals the total to the leader with AES-256-GCM, and the parties relay bytes
they cannot open.

Key: X25519 between the last party's and the leader's session keys of the union (fresh per
session, signed and verified against the federation CA, `fedanon.crypto.keyshare`), so a middle
party
that substitutes its own key fails the signature check long before any sum. HKDF-SHA256 with
salt = session id and its own label separates this key from every onion-union layer key
(those use ephemeral keys and another label). Associated data: session id, iteration and
vector length, so a sealed total cannot be replayed into another iteration or session or cut
short. The nonce is random per message (at most one message per iteration under one key).
"""

from __future__ import annotations

import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fedanon.crypto.errors import IntegrityError
from fedanon.crypto.wire import pack_frames, u64

_LABEL = b"fedanon/ring-sum-total/v1"
_AAD_TAG = b"FRT1"
NONCE_BYTES = 12
TAG_BYTES = 16


class SealedTotalChannel:
    """The last party -> leader channel of one session (only the party seals, only the
    leader opens).

    Both ends build it from their own private key and the other end's public key and derive
    the same AES key; the HKDF info names both public keys (party's first), so the key is bound
    to this pair of session keys and to nothing else.
    """

    def __init__(
        self,
        own_private: X25519PrivateKey,
        peer_public: bytes,
        session_id: bytes,
        party_public: bytes,
        leader_public: bytes,
    ) -> None:
        if not session_id:
            raise ValueError("session id must be non-empty")
        if own_private.public_key().public_bytes_raw() not in (party_public, leader_public):
            raise ValueError("this private key is neither the party's nor the leader's")
        shared = own_private.exchange(X25519PublicKey.from_public_bytes(peer_public))
        info = _LABEL + party_public + leader_public
        self._cipher = AESGCM(HKDF(hashes.SHA256(), 32, salt=session_id, info=info).derive(shared))
        self._session_id = session_id

    @classmethod
    def for_party(
        cls, party_private: X25519PrivateKey, leader_public: bytes, session_id: bytes
    ) -> SealedTotalChannel:
        """The last party's end: it seals."""
        own = party_private.public_key().public_bytes_raw()
        return cls(party_private, leader_public, session_id, own, leader_public)

    @classmethod
    def for_leader(
        cls, leader_private: X25519PrivateKey, party_public: bytes, session_id: bytes
    ) -> SealedTotalChannel:
        """The leader's end: it opens."""
        own = leader_private.public_key().public_bytes_raw()
        return cls(leader_private, party_public, session_id, party_public, own)

    def _aad(self, iteration: int, length: int) -> bytes:
        return _LABEL + pack_frames(_AAD_TAG, [self._session_id, u64(iteration), u64(length)])

    def seal(self, iteration: int, length: int, payload: bytes) -> bytes:
        """Nonce and AES-GCM ciphertext of the masked total of `iteration` (`length` counts)."""
        nonce = secrets.token_bytes(NONCE_BYTES)
        return nonce + self._cipher.encrypt(nonce, payload, self._aad(iteration, length))

    def open(self, iteration: int, length: int, sealed: bytes) -> bytes:
        """The masked total; `IntegrityError` if it was altered, replayed or cut short."""
        if len(sealed) < NONCE_BYTES + TAG_BYTES:
            raise IntegrityError("sealed total is too short")
        nonce, body = sealed[:NONCE_BYTES], sealed[NONCE_BYTES:]
        try:
            return self._cipher.decrypt(nonce, body, self._aad(iteration, length))
        except InvalidTag:
            raise IntegrityError(
                f"sealed total of iteration {iteration} does not authenticate: altered, "
                "replayed from another iteration or session, or not sealed by the last party"
            ) from None
