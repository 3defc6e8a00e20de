"""Ring-mode secure sum: correctness, what a member sees, and the neighbour-collusion weakness."""

from __future__ import annotations

import numpy as np
import pytest

from fedanon.crypto.errors import WireFormatError
from fedanon.crypto.secure_sum import add_vector, start_round
from fedanon.crypto.simulate import Stopwatch, ring_sum
from fedanon.crypto.wire import bytes_to_counts
from fedanon.packed_counts import pack_fields, packed_length, unpack_fields

from .uniformity import CRITICAL, byte_position_chi2, looks_uniform
from .vectors import plain_sum, random_vectors, sum_cases


@sum_cases(max_examples=60)
def test_ring_sum_equals_plain_sum(n: int, length: int, seed: int, full_range: bool) -> None:
    vectors = random_vectors(n, length, seed, full_range)
    assert np.array_equal(ring_sum(vectors), plain_sum(vectors))


def test_ring_sum_wraps_modulo_2_64() -> None:
    top = 2**64 - 1
    result = ring_sum([np.array([top, 5], dtype=np.uint64), np.array([2, top], dtype=np.uint64)])
    assert result.tolist() == [(top + 2) % 2**64, (5 + top) % 2**64]


def test_masks_are_fresh_per_round_and_single_use() -> None:
    mask_a, payload_a = start_round(64)
    _, payload_b = start_round(64)
    assert payload_a != payload_b
    assert mask_a.unmask(payload_a).tolist() == [0] * 64
    with pytest.raises(RuntimeError):
        mask_a.unmask(payload_a)


def test_length_mismatch_is_refused() -> None:
    mask, payload = start_round(4)
    with pytest.raises(WireFormatError):
        add_vector(payload, [1, 2, 3])
    with pytest.raises(WireFormatError):
        mask.unmask(payload[:-8])


def member_views(rounds: int, length: int) -> np.ndarray:
    """What the third party of a 4-party ring receives, over many rounds of fixed small counts."""
    vectors = random_vectors(4, length, seed=7, full_range=False)
    views = []
    for _ in range(rounds):
        _, payload = start_round(length)
        for vector in vectors[:2]:
            payload = add_vector(payload, vector)
        views.append(bytes_to_counts(payload))
    return np.concatenate(views)


def test_member_view_is_uniform() -> None:
    assert looks_uniform(member_views(rounds=64, length=2048))


def test_uniformity_check_detects_unmasked_and_badly_masked_views() -> None:
    # The same check must fail on an unmasked view and on a mask that only covers 32 bits, or
    # passing it above would mean nothing.
    vectors = random_vectors(2, 64 * 2048, seed=7, full_range=False)
    unmasked = vectors[0] + vectors[1]
    assert not looks_uniform(unmasked)
    weak_mask = np.random.default_rng(0).integers(0, 2**32, size=unmasked.size, dtype=np.uint64)
    stats = byte_position_chi2(unmasked + weak_mask)
    assert max(stats[:4]) < CRITICAL  # the low bytes look fine ...
    assert min(stats[5:]) > CRITICAL  # ... the untouched high bytes give it away
    assert not looks_uniform(unmasked + weak_mask)


def test_two_colluding_neighbours_recover_the_middle_vector() -> None:
    """The documented ring weakness: p0 and p2 subtract what they sent and received."""
    vectors = random_vectors(4, 500, seed=3, full_range=True)
    _, payload = start_round(500)
    payload = add_vector(payload, vectors[0])
    sent_by_p0 = payload  # p0 knows what it forwarded
    payload = add_vector(payload, vectors[1])
    received_by_p2 = payload  # p2 knows what it got
    recovered = bytes_to_counts(received_by_p2) - bytes_to_counts(sent_by_p0)
    assert np.array_equal(recovered, vectors[1])


def test_stopwatch_charges_every_role() -> None:
    clock = Stopwatch()
    ring_sum(random_vectors(3, 100, seed=1, full_range=False), clock)
    assert set(clock.phase("round")) == {"leader", "p0", "p1", "p2"}
    assert all(seconds >= 0 for seconds in clock.seconds.values())


@pytest.mark.parametrize("bits", [1, 2, 7, 15, 16, 20, 21, 32])
def test_packed_vectors_sum_field_by_field_without_a_carry(bits: int) -> None:
    """Parties' packed vectors, added mod 2^64 through a masked ring, unpack to the plain sum
    of their counts whenever every total fits its field (the largest total included)."""
    rng = np.random.default_rng(bits)
    length = 1001  # not a multiple of any field count: the last word is padded
    totals = rng.integers(0, 1 << bits, length, dtype=np.uint64)
    totals[-1] = (1 << bits) - 1
    first = rng.integers(0, totals + np.uint64(1), dtype=np.uint64)
    second = rng.integers(0, totals - first + np.uint64(1), dtype=np.uint64)
    parts = [first, second, totals - first - second]
    summed = ring_sum([pack_fields(p, bits) for p in parts])
    assert summed.size == packed_length(length, bits) == -(-length // (64 // bits))
    assert unpack_fields(summed, bits, length).tolist() == totals.tolist()


@pytest.mark.parametrize(("bits", "width"), [(15, 16), (16, 16), (13, 16), (8, 8), (20, 21)])
def test_fields_take_the_widest_width_that_keeps_their_number_per_word(
    bits: int, width: int
) -> None:
    """A 15-bit bound packs four counts to the word, as 16 bits would: each field then takes
    16 bits, so the words are the counts' little-endian 16-bit cells (packed and unpacked by
    a view); a 20-bit bound keeps three 21-bit fields."""
    counts = np.arange(1, 10, dtype=np.int64) * 97 % (1 << bits)
    per = 64 // width
    words = pack_fields(counts, bits)
    cells = np.zeros(len(words) * per, dtype=np.uint64)
    cells[: len(counts)] = counts
    expected = [
        sum(int(c) << (i * width) for i, c in enumerate(cells[w * per : (w + 1) * per]))
        for w in range(len(words))
    ]
    assert words.dtype == np.uint64 and words.tolist() == expected
    assert unpack_fields(words, bits, len(counts)).tolist() == counts.tolist()
    with pytest.raises(ValueError, match="non-negative"):
        pack_fields(np.array([1, -1]), bits)


def test_unpacked_widths_leave_one_count_per_word() -> None:
    vector = np.array([3, 2**40, 7], dtype=np.uint64)
    for bits in (0, 33, 64):
        assert pack_fields(vector, bits).tolist() == vector.tolist()
        assert unpack_fields(vector, bits, 3).tolist() == vector.tolist()


def test_a_count_wider_than_its_field_is_refused() -> None:
    with pytest.raises(ValueError, match="4 bits"):
        pack_fields(np.array([15, 16]), 4)
    with pytest.raises(ValueError):
        pack_fields(np.array([1]), 65)
    with pytest.raises(ValueError):
        unpack_fields(np.zeros(2, dtype=np.uint64), 16, 9)  # 9 counts need 3 words


def test_a_packed_vector_with_words_to_spare_is_refused() -> None:
    """A summed vector longer than its counts need (another round's, or padding a peer
    added) is refused, not read from its first words."""
    words = pack_fields(np.arange(9, dtype=np.uint64), 16)
    assert unpack_fields(words, 16, 9).tolist() == list(range(9))
    with pytest.raises(ValueError, match="do not hold 9 counts"):
        unpack_fields(np.concatenate([words, words]), 16, 9)
    with pytest.raises(ValueError, match="do not hold 3 counts"):
        unpack_fields(np.zeros(4, dtype=np.uint64), 0, 3)  # one count per word
