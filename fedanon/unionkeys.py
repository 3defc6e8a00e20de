"""Session key shares for the secure set union, as both the party and the leader handle them.

With mutual TLS a share is signed by its holder's certificate key (crypto/keyshare.py) and every
receiver verifies it against the federation CA, so the relaying leader cannot substitute a key.
In --insecure mode the share is the bare X25519 public key: no authentication at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from crypto.identity import Identity
from crypto.keyshare import ONION_UNION, PeerKey, create_key_share, verify_key_share
from crypto.onion_union import build_route
from protos import fedanon_v1_pb2 as pb


def new_union_share(
    identity: Identity | None, name: str, role: str, session_id: bytes
) -> tuple[X25519PrivateKey, pb.KeyShare]:
    """A fresh union key for this session and its (signed, unless insecure) announcement."""
    if identity is None:
        private = X25519PrivateKey.generate()
        share = private.public_key().public_bytes_raw()
    else:
        private, share = create_key_share(identity, session_id, ONION_UNION)
    return private, pb.KeyShare(holder=name, role=role, purpose=ONION_UNION, share=share)


def union_route(
    shares: Sequence[pb.KeyShare],
    ring: Sequence[str],
    session_id: bytes,
    ca: x509.Certificate | None,
) -> tuple[bytes, ...]:
    """Verify every union share (unless insecure) and order the keys into the ring's route."""
    peers = []
    for share in shares:
        if share.purpose != ONION_UNION:
            continue
        if ca is None:
            peers.append(PeerKey(share.holder, share.role, bytes(share.share)))
        else:
            peers.append(verify_key_share(bytes(share.share), ca, session_id, ONION_UNION,
                                          expected_name=share.holder, expected_role=share.role))
    return build_route(peers, ring)
