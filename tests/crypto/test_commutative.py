"""Commutative (SRA) encryption and the dedup set union built on it."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fedanon.crypto.commutative import (
    MAX_VALUE_BYTES,
    P,
    Q,
    SraKey,
    decode,
    decrypt_batch,
    distinct,
    encode,
    encrypt_batch,
    is_element,
    pack_elements,
    unpack_elements,
)
from fedanon.crypto.errors import WireFormatError
from fedanon.crypto.simulate import dedup_union


def test_group_constants() -> None:
    assert P.bit_length() == 2048
    assert P % 4 == 3  # so -1 is a non-residue and exactly one of m, P-m is a residue
    assert pow(2, P - 1, P) == 1 and pow(2, Q, P) == 1  # Fermat witness; 2 is a residue


@settings(max_examples=300)
@given(st.binary(max_size=MAX_VALUE_BYTES))
@example(b"")
@example(b"\x00")
@example(b"\xff" * MAX_VALUE_BYTES)
def test_encode_decode_round_trip(value: bytes) -> None:
    element = encode(value)
    assert is_element(element)
    assert decode(element) == value


@pytest.mark.parametrize("value", [b"", b"\x01", b"abc", b"\xff" * MAX_VALUE_BYTES])
def test_encoding_lands_in_the_residue_group(value: bytes) -> None:
    # Euler's criterion with plain pow(), independent of the gmpy2 Jacobi symbol is_element uses.
    assert pow(encode(value), Q, P) == 1


def test_value_length_is_bounded() -> None:
    with pytest.raises(ValueError):
        encode(b"x" * (MAX_VALUE_BYTES + 1))


def test_encryption_commutes_and_decryption_inverts() -> None:
    a, b = SraKey.generate(), SraKey.generate()
    x = encode(b"hospital value")
    ab, ba = b.encrypt(a.encrypt(x)), a.encrypt(b.encrypt(x))
    assert ab == ba != x
    assert is_element(ab)
    assert a.decrypt(b.decrypt(ab)) == x
    assert decode(b.decrypt(a.decrypt(ab))) == b"hospital value"
    assert SraKey.generate().encrypt(x) != a.encrypt(x)


def test_batches_are_shuffled_and_complete() -> None:
    key = SraKey.generate()
    elements = [encode(bytes([i])) for i in range(40)]
    encrypted = encrypt_batch(key, elements)
    assert sorted(encrypted) == sorted(key.encrypt(x) for x in elements)
    assert sorted(decrypt_batch(key, encrypted)) == sorted(elements)
    assert distinct([5, 3, 5, 1]) == [1, 3, 5]


def test_wrong_key_does_not_decode() -> None:
    a, b = SraKey.generate(), SraKey.generate()
    with pytest.raises(WireFormatError):
        decode(b.decrypt(a.encrypt(encode(b"v"))))


def test_received_elements_are_validated() -> None:
    x = encode(b"v")
    assert unpack_elements(pack_elements([x])) == [x]
    for bad in (0, P - x, P):  # zero, a non-residue, out of range
        frame = pack_elements([1]).replace((1).to_bytes(256, "big"), bad.to_bytes(256, "big"))
        with pytest.raises(WireFormatError):
            unpack_elements(frame)
    with pytest.raises(WireFormatError):
        unpack_elements(pack_elements([x])[:-1])


# A small pool makes values shared between parties common; arbitrary bytes add the rest.
VALUES = st.one_of(st.sampled_from([b"", b"\x00", b"a", b"b", b"c", b"90210"]), st.binary())


@settings(max_examples=12, deadline=None)
@given(st.lists(st.sets(VALUES, max_size=5), min_size=2, max_size=4))
def test_dedup_union_is_the_set_union(sets: list[set[bytes]]) -> None:
    assert dedup_union(sets) == sorted(set().union(*sets))


def test_dedup_union_with_heavy_overlap() -> None:
    sets = [{b"a", b"b", b"c"}, {b"b", b"c", b"d"}, {b"c"}]
    assert dedup_union(sets) == [b"a", b"b", b"c", b"d"]
