"""Mask generation, shuffling and the byte encodings every message uses."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedanon.crypto.errors import WireFormatError
from fedanon.crypto.masks import fresh_mask, keyed_mask
from fedanon.crypto.shuffle import secure_shuffle
from fedanon.crypto.wire import (
    as_counts,
    bytes_to_counts,
    counts_to_bytes,
    pack_frames,
    unpack_frames,
)

from .uniformity import looks_uniform


def test_keyed_mask_is_deterministic_per_key_and_a_prefix_stream() -> None:
    key = secrets.token_bytes(32)
    long = keyed_mask(key, 1000)
    assert np.array_equal(keyed_mask(key, 1000), long)
    assert np.array_equal(keyed_mask(key, 10), long[:10])
    assert not np.array_equal(keyed_mask(secrets.token_bytes(32), 1000), long)
    assert keyed_mask(key, 0).size == 0


def test_keyed_mask_is_the_aes_ctr_keystream() -> None:
    # With a zero counter the first keystream block is AES-256 of the zero block; under the
    # all-zero key that is the known value below. The second block (counter 1) must differ.
    stream = keyed_mask(bytes(32), 4).tobytes()
    assert stream[:16] == bytes.fromhex("dc95c078a2408989ad48a21492842087")
    assert stream[16:] != stream[:16]


def test_fresh_masks_are_uniform_and_never_repeat() -> None:
    first, second = fresh_mask(1 << 17), fresh_mask(1 << 17)
    assert looks_uniform(first)
    assert not np.array_equal(first, second)


def test_mask_key_length_is_checked() -> None:
    with pytest.raises(ValueError):
        keyed_mask(b"short", 4)


@given(st.lists(st.integers(0, 2**64 - 1), max_size=50))
def test_counts_round_trip(values: list[int]) -> None:
    vector = as_counts(np.array(values, dtype=np.uint64))
    data = counts_to_bytes(vector)
    assert len(data) == 8 * len(values)
    assert bytes_to_counts(data, len(values)).tolist() == values


def test_counts_validation() -> None:
    assert as_counts([1, 2, 3]).dtype == np.uint64
    assert as_counts([]).size == 0
    with pytest.raises(ValueError):
        as_counts([1, -1])
    with pytest.raises(TypeError):
        as_counts([0.5])
    with pytest.raises(ValueError):
        as_counts([[1, 2]])
    with pytest.raises(WireFormatError):
        bytes_to_counts(b"\x00" * 7)
    with pytest.raises(WireFormatError):
        bytes_to_counts(b"\x00" * 16, length=3)


@given(st.lists(st.binary(max_size=300), max_size=20))
def test_frames_round_trip(items: list[bytes]) -> None:
    assert unpack_frames(b"TEST", pack_frames(b"TEST", items)) == items


@pytest.mark.parametrize(
    "mangle",
    [
        lambda data: data[:-1],  # truncated
        lambda data: data + b"\x00",  # trailing bytes
        lambda data: b"XXXX" + data[4:],  # another message type
        lambda data: data[:4] + b"\x00\x00\x00\x09" + data[8:],  # wrong item count
    ],
)
def test_frames_reject_malformed(mangle) -> None:
    data = pack_frames(b"TEST", [b"abc", b"de"])
    with pytest.raises(WireFormatError):
        unpack_frames(b"TEST", mangle(data))


def test_frames_expected_count() -> None:
    data = pack_frames(b"TEST", [b"a", b"b"])
    assert unpack_frames(b"TEST", data, count=2) == [b"a", b"b"]
    with pytest.raises(WireFormatError):
        unpack_frames(b"TEST", data, count=3)


def test_secure_shuffle_is_a_permutation_and_moves_things() -> None:
    items = list(range(1000))
    secure_shuffle(items)
    assert sorted(items) == list(range(1000))
    assert items != list(range(1000))  # identity has probability 1/1000!


def test_secure_shuffle_is_uniform_on_three_items() -> None:
    counts: dict[tuple[int, ...], int] = {}
    for _ in range(6000):
        items = [0, 1, 2]
        secure_shuffle(items)
        counts[tuple(items)] = counts.get(tuple(items), 0) + 1
    assert len(counts) == 6
    # Each permutation expects 1000; 6 sigma is about 170.
    assert all(abs(c - 1000) < 200 for c in counts.values())


def test_a_draw_with_a_repeated_key_is_redrawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sorting by keys is uniform only when they are distinct: a draw with a tie is discarded
    and the permutation comes from the next draw."""
    import fedanon.crypto.shuffle as shuffle

    tie = np.array([5, 5, 1], dtype=np.uint64).tobytes()
    distinct = np.array([3, 1, 2], dtype=np.uint64).tobytes()
    draws = iter([tie, distinct])
    monkeypatch.setattr("fedanon.crypto.shuffle.secrets.token_bytes", lambda n: next(draws))
    assert shuffle.secure_permutation(3).tolist() == [1, 2, 0]
    items = ["a", "b", "c"]
    draws = iter([distinct])
    secure_shuffle(items)
    assert items == ["b", "c", "a"]
