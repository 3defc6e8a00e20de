"""Session key shares (union and pairwise-sum keys) as both the party and the leader handle them.

With mutual TLS a share is signed by its holder's certificate key (crypto/keyshare.py) and every
receiver verifies it against the federation CA, so the relaying leader cannot substitute a key.
In --insecure mode the share is the bare X25519 public key: no authentication at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.identity import Identity
from fedanon.crypto.keyshare import PeerKey, create_key_share, verify_key_share
from fedanon.protos import fedanon_v1_pb2 as pb


def new_share(
    identity: Identity | None, name: str, role: str, session_id: bytes, purpose: str
) -> tuple[X25519PrivateKey, pb.KeyShare]:
    """A fresh key for this session and purpose, and its (signed, unless insecure) share."""
    if identity is None:
        private = X25519PrivateKey.generate()
        share = private.public_key().public_bytes_raw()
    else:
        private, share = create_key_share(identity, session_id, purpose)
    return private, pb.KeyShare(holder=name, role=role, purpose=purpose, share=share)


def verified_peers(
    shares: Sequence[pb.KeyShare], purpose: str, session_id: bytes, ca: x509.Certificate | None
) -> list[PeerKey]:
    """The shares of `purpose`, each verified against the CA (unless insecure)."""
    peers = []
    for share in shares:
        if share.purpose != purpose:
            continue
        if ca is None:
            peers.append(PeerKey(share.holder, share.role, bytes(share.share)))
        else:
            peers.append(
                verify_key_share(
                    bytes(share.share),
                    ca,
                    session_id,
                    purpose,
                    expected_name=share.holder,
                    expected_role=share.role,
                )
            )
    return peers
