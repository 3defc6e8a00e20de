"""The ring sum's total sealed by the last party: only the leader opens it, bound to its
session, iteration and length (crypto/sealed_total.py)."""

from __future__ import annotations

import secrets

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.errors import IntegrityError
from fedanon.crypto.sealed_total import SealedTotalChannel

SESSION = bytes(range(16))


def _keys() -> tuple[X25519PrivateKey, X25519PrivateKey, X25519PrivateKey]:
    return X25519PrivateKey.generate(), X25519PrivateKey.generate(), X25519PrivateKey.generate()


def _public(key: X25519PrivateKey) -> bytes:
    return key.public_key().public_bytes_raw()


def test_the_leader_opens_what_the_last_party_sealed() -> None:
    last, leader, _ = _keys()
    payload = secrets.token_bytes(8 * 50)
    sealed = SealedTotalChannel.for_party(last, _public(leader), SESSION).seal(7, 50, payload)
    assert payload not in sealed and len(sealed) == len(payload) + 28
    opener = SealedTotalChannel.for_leader(leader, _public(last), SESSION)
    assert opener.open(7, 50, sealed) == payload


def test_a_middle_party_cannot_open_the_total() -> None:
    """A relaying party holds its own union key, not the leader's: opening fails."""
    last, leader, middle = _keys()
    sealed = SealedTotalChannel.for_party(last, _public(leader), SESSION).seal(1, 2, bytes(16))
    with pytest.raises(IntegrityError):
        SealedTotalChannel.for_leader(middle, _public(last), SESSION).open(1, 2, sealed)
    # Nor can a middle party forge a total the leader would take as the last party's.
    forged = SealedTotalChannel.for_party(middle, _public(leader), SESSION).seal(1, 2, bytes(16))
    with pytest.raises(IntegrityError):
        SealedTotalChannel.for_leader(leader, _public(last), SESSION).open(1, 2, forged)


@pytest.mark.parametrize("change", ["iteration", "length", "session", "flipped byte", "truncated"])
def test_a_total_cannot_be_replayed_or_altered(change: str) -> None:
    last, leader, _ = _keys()
    sealed = SealedTotalChannel.for_party(last, _public(leader), SESSION).seal(3, 4, bytes(32))
    iteration, length = 3, 4
    opener = SealedTotalChannel.for_leader(leader, _public(last), SESSION)
    if change == "iteration":
        iteration = 4
    elif change == "length":
        length = 5
    elif change == "session":
        opener = SealedTotalChannel.for_leader(leader, _public(last), bytes(16))
    elif change == "flipped byte":
        sealed = sealed[:20] + bytes([sealed[20] ^ 1]) + sealed[21:]
    else:
        sealed = sealed[:20]
    with pytest.raises(IntegrityError):
        opener.open(iteration, length, sealed)


def test_a_key_that_is_neither_end_is_refused() -> None:
    last, leader, other = _keys()
    with pytest.raises(ValueError, match="neither"):
        SealedTotalChannel(other, _public(leader), SESSION, _public(last), _public(leader))


def test_every_seal_draws_a_fresh_nonce() -> None:
    """AES-GCM under one key per session: a nonce used twice (two iterations, or a retry) would
    give away the XOR of two totals and the authentication key. Each seal's 12-byte prefix is
    its nonce; no two of a session's seals share one."""
    last, leader, _ = _keys()
    channel = SealedTotalChannel.for_party(last, _public(leader), SESSION)
    sealed = [channel.seal(i, 4, bytes(32)) for i in range(50)] + [channel.seal(7, 4, bytes(32))]
    nonces = {s[:12] for s in sealed}
    assert len(nonces) == len(sealed)
    opener = SealedTotalChannel.for_leader(leader, _public(last), SESSION)
    assert opener.open(7, 4, sealed[-1]) == bytes(32)
