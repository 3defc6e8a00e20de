"""Uniform uint64 mask vectors from an AES-CTR keystream.

A mask must be uniform over (Z/2^64)^n and unpredictable; numpy's generators are neither seeded
from a cryptographic source nor designed to resist prediction, and `secrets.token_bytes` on 8 MB
per round is slow. AES-256 in counter mode under a fresh 256-bit key is a cryptographic PRG that
runs at memory speed with AES-NI, and the same construction serves pairwise masks whose key both
parties derive (so they generate the identical stream without sending it).
"""

from __future__ import annotations

import secrets

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from fedanon.crypto.wire import COUNT_BYTES, COUNT_DTYPE

MASK_KEY_BYTES = 32
_ZERO_COUNTER = bytes(16)


def keyed_mask(key: bytes, length: int) -> np.ndarray:
    """The first `length` uint64 words of the AES-256-CTR keystream under `key` (read-only).

    The counter starts at zero: this is safe because every caller uses a key for exactly one
    stream (a fresh random key per ring round, an HKDF output per session, round and pair).
    """
    if len(key) != MASK_KEY_BYTES:
        raise ValueError(f"mask keys are {MASK_KEY_BYTES} bytes")
    if length < 0:
        raise ValueError("mask length must be non-negative")
    encryptor = Cipher(algorithms.AES(key), modes.CTR(_ZERO_COUNTER)).encryptor()
    stream = encryptor.update(bytes(length * COUNT_BYTES)) + encryptor.finalize()
    return np.frombuffer(stream, dtype=COUNT_DTYPE)


def fresh_mask(length: int) -> np.ndarray:
    """A uniform mask under a new key from `secrets`; the key is dropped, so it never recurs."""
    return keyed_mask(secrets.token_bytes(MASK_KEY_BYTES), length)
