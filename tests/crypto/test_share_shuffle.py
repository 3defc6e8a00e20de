"""The secret-shared shuffle union (fedanon.crypto.share_shuffle): correctness, guards, hiding."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.errors import IntegrityError, WireFormatError
from fedanon.crypto.share_shuffle import (
    PairKeys,
    ShuffleContext,
    ShuffleParty,
    decode_items,
    encode_block,
    open_shuffled,
    schedule,
)

SESSION = b"session-1"


def _federation(
    blocks: list[list[bytes]], pad_to: int = 0, record_size: int = 64, chunk_bytes: int = 1 << 22
):
    keys = [X25519PrivateKey.generate() for _ in blocks]
    publics = tuple(k.public_key().public_bytes_raw() for k in keys)
    sizes = tuple(pad_to or len(b) for b in blocks)
    ctx = ShuffleContext(SESSION, 3, publics, record_size, sizes, chunk_bytes)
    parties = [ShuffleParty(PairKeys(k, publics, SESSION), ctx) for k in keys]
    return ctx, parties


def run_shuffle(
    blocks: list[list[bytes]], pad_to: int = 0, chunk_bytes: int = 1 << 22
) -> tuple[list[bytes], dict]:
    """The whole protocol in process, as the leader relays it; returns the leader's output and
    what every role received (role -> list of byte strings)."""
    ctx, parties = _federation(blocks, pad_to, chunk_bytes=chunk_bytes)
    n = len(parties)
    seen: dict[str, list[bytes]] = {f"P{i}": [] for i in range(n)}
    seen["leader"] = []
    owned = [p.owner_message(b) for p, b in zip(parties, blocks, strict=True)]
    for i, message in enumerate(owned):
        assert len(message) == (ctx.chunk_count(len(blocks[i]) or pad_to) if i >= 2 else 0)
        seen["leader"] += message
    incoming = [m for message in owned[2:] for m in message]
    final: list[bytes] = []
    for t in range(n):
        first, second = t, (t + 1) % n
        seen[f"P{second}"] += incoming
        out_first = parties[first].step(t, [])
        out_second = parties[second].step(t, incoming)
        seen["leader"] += out_first + out_second
        if t == n - 1:
            final = out_first + out_second
        else:
            assert out_second == []
            incoming = out_first
    return open_shuffled(final, ctx), seen


def test_union_is_the_multiset_of_all_records_and_drops_dummies() -> None:
    blocks = [[f"a{i}".encode() for i in range(7)], [b"b0", b"b0"], [], [b"d" * 64, b"e"]]
    records, _ = run_shuffle(blocks, pad_to=9)
    assert Counter(records) == Counter(r for block in blocks for r in block)


def test_a_block_of_repeated_records_encodes_each_record_as_itself() -> None:
    """Repeated records are encoded once and reused: every item still decodes to its own
    record, in order, whatever repeats around it (equal bytes, equal lengths)."""
    records = [b"ab", b"ab", b"ba", b"", b"a" * 2, b"ab\0", b"c" * 64, b"ba", b""]
    ctx, _ = _federation([records, [b"x"], [b"y"]], pad_to=12)
    block = encode_block(records, ctx, 0)
    assert block.shape == (12, ctx.item_size)
    assert decode_items(block, ctx) == records


def test_empty_and_unpadded_blocks_unite() -> None:
    blocks = [[b"x"], [], [b"y", b"z"]]
    records, _ = run_shuffle(blocks)
    assert sorted(records) == [b"x", b"y", b"z"]


def test_each_party_takes_part_in_exactly_two_consecutive_pairs() -> None:
    n = 5
    pairs = [(t, (t + 1) % n) for t in range(n)]
    for p in range(n):
        assert schedule(p, n) == [t for t, pair in enumerate(pairs) if p in pair]


def test_output_order_hides_the_owner() -> None:
    """Over many runs, the record at output position 0 comes from each of 3 owners about a third
    of the time (binomial, 300 runs: 100 +- 5 sigma ~ 100 +- 41)."""
    owners: Counter[bytes] = Counter()
    blocks = [[b"A0", b"A1"], [b"B0", b"B1"], [b"C0", b"C1"]]
    for _ in range(300):
        records, _ = run_shuffle(blocks)
        owners[records[0][:1]] += 1
    assert set(owners) == {b"A", b"B", b"C"}
    assert all(59 <= count <= 141 for count in owners.values()), owners


def test_every_received_message_has_uniform_bytes_and_no_record() -> None:
    """No role receives a share in which the records (or their zero padding) show: byte
    frequencies of each received message are those of uniform bytes."""
    blocks = [[b"same record"] * 400 for _ in range(3)]
    _, seen = run_shuffle(blocks)
    for role, messages in seen.items():
        for message in messages:
            counts = np.bincount(np.frombuffer(message, np.uint8), minlength=256)
            expected = len(message) / 256
            chi2 = float(((counts - expected) ** 2 / expected).sum())
            assert chi2 < 400, f"{role} received a non-uniform message (chi2 {chi2:.0f})"
            assert b"same record" not in message


def test_tampered_handoff_fails_authentication() -> None:
    _, parties = _federation([[b"a"], [b"b"], [b"c"]])
    owned = [p.owner_message(r) for p, r in zip(parties, [[b"a"], [b"b"], [b"c"]], strict=True)]
    flipped = bytearray(owned[2][0])
    flipped[-1] ^= 1
    parties[0].step(0, [])
    with pytest.raises(IntegrityError):
        parties[1].step(0, [bytes(flipped)])


def test_steps_out_of_order_or_repeated_are_refused() -> None:
    _, parties = _federation([[b"a"], [b"b"], [b"c"]])
    for party, block in zip(parties, [[b"a"], [b"b"], [b"c"]], strict=True):
        party.owner_message(block)
    with pytest.raises(ValueError, match="out of order"):
        parties[0].step(2, [])
    parties[0].step(0, [])
    with pytest.raises(ValueError, match="out of order"):
        parties[0].step(0, [])
    with pytest.raises(ValueError, match="already shared"):
        parties[1].owner_message([b"b"])


def test_records_beyond_the_block_or_the_record_size_are_refused() -> None:
    _, parties = _federation([[b"a"], [b"b"], [b"c"]], pad_to=1)
    with pytest.raises(ValueError, match="exceed"):
        parties[0].owner_message([b"a", b"b"])
    _, parties = _federation([[b"a"], [b"b"], [b"c"]], record_size=4)
    with pytest.raises(ValueError, match="record_size"):
        parties[2].owner_message([b"too long"])


def test_shares_of_the_wrong_size_or_number_are_refused() -> None:
    ctx, _ = _federation([[b"a"], [b"b"], [b"c"]])
    with pytest.raises(WireFormatError):
        open_shuffled([bytes(ctx.share_bytes)], ctx)
    with pytest.raises(WireFormatError):
        open_shuffled([bytes(ctx.share_bytes), bytes(ctx.share_bytes - 1)], ctx)


def test_two_parties_are_refused() -> None:
    keys = [X25519PrivateKey.generate().public_key().public_bytes_raw() for _ in range(2)]
    with pytest.raises(ValueError, match="three parties"):
        ShuffleContext(SESSION, 0, tuple(keys), 64, (1, 1))


def test_shares_travel_in_pieces_of_at_most_the_chunk_size() -> None:
    # 67-byte items, 200-byte chunks: 2 items a piece; 11 records make 6 pieces per share.
    blocks = [[f"r{i}-{o}".encode() for i in range(n)] for o, n in enumerate([4, 0, 5, 2])]
    out, seen = run_shuffle(blocks, chunk_bytes=200)
    assert Counter(out) == Counter(r for b in blocks for r in b)
    pieces = [m for role, messages in seen.items() for m in messages]
    assert max(map(len, pieces)) <= 200 + 28  # nonce and tag around two items
    assert len(seen["P1"]) > len(blocks) - 2  # owners' blocks did arrive in several pieces


def test_pieces_reordered_or_dropped_are_refused() -> None:
    blocks = [[b"a"], [b"b"], [b"c", b"d", b"e"]]
    for mangle, error in [
        (lambda pieces: pieces[::-1], IntegrityError),
        (lambda pieces: pieces[:-1], WireFormatError),
        (lambda pieces: pieces + pieces[-1:], WireFormatError),
    ]:
        _, parties = _federation(blocks, chunk_bytes=70)
        owned = [p.owner_message(b) for p, b in zip(parties, blocks, strict=True)]
        assert len(owned[2]) == 3  # one item (67 bytes) per piece
        parties[0].step(0, [])
        with pytest.raises(error):
            parties[1].step(0, mangle(owned[2]))
