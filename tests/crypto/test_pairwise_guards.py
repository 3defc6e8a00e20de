"""Pairwise masks: a known-answer test that binds each mask key to the session, and the roster
and key-share checks that keep a malformed setup from becoming a silent wrong sum."""

from __future__ import annotations

import hashlib
import struct

import numpy as np
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fedanon.crypto.errors import IntegrityError
from fedanon.crypto.keyshare import PeerKey
from fedanon.crypto.pairwise import PairwiseAggregator, PairwiseMasker

ROSTER = ["alpha", "bravo", "charlie"]
SESSION = bytes.fromhex("00112233445566778899aabbccddeeff")


def _private(seed: int) -> X25519PrivateKey:
    return X25519PrivateKey.from_private_bytes(bytes([seed]) * 32)


def _peer(name: str, seed: int) -> PeerKey:
    return PeerKey(name, "party", _private(seed).public_key().public_bytes_raw())


def _frames(tag: bytes, items: list[bytes]) -> bytes:
    """The documented frame format, written out here: tag, u32 count, (u32 length, bytes)*."""
    out = tag + struct.pack(">I", len(items))
    for item in items:
        out += struct.pack(">I", len(item)) + item
    return out


def _reference_mask(
    session: bytes, round_: int, low: int, high: int, length: int, attempt: int = 0
) -> np.ndarray:
    """The pair mask from its documented construction (docs/crypto.md, docs/leakage.md):
    AES-256-CTR (zero counter) under HKDF-SHA256(X25519 secret; salt = session id;
    info = label | frames(round, attempt, SHA-256(frames(roster)), low name, high name))."""
    secret = _private(low).exchange(_private(high).public_key())
    digest = hashlib.sha256(_frames(b"FPR1", [n.encode() for n in ROSTER])).digest()
    info = b"fedanon/pairwise-mask/v1" + _frames(
        b"FPI1",
        [
            struct.pack(">Q", round_),
            struct.pack(">Q", attempt),
            digest,
            ROSTER[low].encode(),
            ROSTER[high].encode(),
        ],
    )
    key = HKDF(hashes.SHA256(), 32, salt=session, info=info).derive(secret)
    stream = Cipher(algorithms.AES(key), modes.CTR(bytes(16))).encryptor().update(bytes(8 * length))
    return np.frombuffer(stream, dtype="<u8")


def _masker(index: int, session: bytes = SESSION, attempt: int = 0) -> PairwiseMasker:
    peers = [_peer(name, i) for i, name in enumerate(ROSTER)]
    return PairwiseMasker(ROSTER[index], _private(index), peers, ROSTER, session, False, attempt)


@pytest.mark.parametrize("attempt", [0, 1])
def test_pair_mask_known_answer(attempt: int) -> None:
    """Both ends of a pair derive exactly the documented mask, of the session's attempt."""
    expected = _reference_mask(SESSION, 5, 0, 2, 64, attempt)
    assert np.array_equal(_masker(0, attempt=attempt).pair_mask(5, "charlie", 64), expected)
    assert np.array_equal(_masker(2, attempt=attempt).pair_mask(5, "alpha", 64), expected)


def test_the_mask_key_is_bound_to_the_session() -> None:
    """Same keys, same round, same roster, another session id: another mask. (If the session
    did not enter the key, masks from two sessions with the same keys would cancel against each
    other: a party's two shares would differ by its vectors' difference.)"""
    other = bytes(16)
    assert not np.array_equal(
        _masker(0).pair_mask(1, "bravo", 16), _masker(0, other).pair_mask(1, "bravo", 16)
    )
    assert np.array_equal(
        _masker(0, other).pair_mask(1, "bravo", 16), _reference_mask(other, 1, 0, 1, 16)
    )


@pytest.mark.parametrize("roster", [["alpha", "bravo", "alpha"], ["alpha", "bravo", "bravo"]])
def test_a_roster_with_a_repeated_name_is_refused(roster: list[str]) -> None:
    """A clear error on both sides, not a KeyError at the masker or a sum the masks never
    cancel in at the aggregator."""
    peers = [_peer(name, i) for i, name in enumerate(ROSTER)]
    with pytest.raises(ValueError, match="distinct"):
        PairwiseMasker("alpha", _private(0), peers, roster, SESSION)
    with pytest.raises(ValueError, match="distinct"):
        PairwiseAggregator(roster, SESSION)


def test_a_second_key_share_from_one_peer_is_refused() -> None:
    """Two shares for bravo (another key in the second): refused, never the last one kept."""
    peers = [_peer("alpha", 0), _peer("bravo", 1), _peer("charlie", 2), _peer("bravo", 9)]
    with pytest.raises(IntegrityError, match="two key shares from 'bravo'"):
        PairwiseMasker("alpha", _private(0), peers, ROSTER, SESSION)
