"""Layered union: what the multiset tests do not show.

* Every party hop shuffles: the order of its output is unlinkable to the order of its input
  (statistical tests with stated false-alarm rates);
* the leader's decoder refuses an innermost record whose length field overruns the record size
  or whose padding is not zero (a party that could smuggle bytes there would mark records);
* the union context refuses repeated route keys and every other malformed field.
"""

from __future__ import annotations

import math
import secrets
import struct
from dataclasses import astuple
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.errors import IntegrityError, WireFormatError
from fedanon.crypto.onion_union import (
    LAYER_OVERHEAD,
    ChunkedOpen,
    ChunkedPeel,
    UnionContext,
    _seal_innermost,
    open_records,
    peel_layer,
    seal_records,
)
from fedanon.crypto.packed import Packed
from fedanon.crypto.parallel import Parallelism

RECORD_SIZE = 16
ITEMS = 256
INNER_HEADER = struct.Struct(">BH")  # kind (0 real, 1 dummy), record length: the documented form


def _keys(n: int) -> list[X25519PrivateKey]:
    return [X25519PrivateKey.generate() for _ in range(n)]


def _context(keys: list[X25519PrivateKey], record_size: int = RECORD_SIZE) -> UnionContext:
    route = tuple(k.public_key().public_bytes_raw() for k in keys)
    return UnionContext(secrets.token_bytes(16), 0, route, record_size)


def _positions_after_one_hop() -> list[int]:
    """Seal records 0..ITEMS-1 in order for one party and the leader, let the party hop strip
    its layer, open the leader's layer: where did record i end up?"""
    party, leader = _keys(2)
    ctx = _context([party, leader])
    records = [i.to_bytes(2, "big") for i in range(ITEMS)]
    stripped = peel_layer(seal_records(records, ctx), party, 0, ctx)
    opened = open_records(stripped, leader, ctx)
    assert sorted(opened) == records
    return [opened.index(r) for r in records]


def _poisson_tail(mean: float, k: int) -> float:
    """P(X >= k) for X ~ Poisson(mean)."""
    return 1.0 - sum(math.exp(-mean) * mean**j / math.factorial(j) for j in range(k))


def test_a_hop_output_order_is_unlinkable_to_its_input_order() -> None:
    """For a uniform permutation of n = 256 items the number of fixed points is close to
    Poisson(1) and the number of input neighbours that stay neighbours (either direction) close
    to Poisson(2). Thresholds 9 and 12 give false-alarm rates below 1e-5 each (computed below);
    a hop that keeps, reverses or rotates the order exceeds one of them by far."""
    fixed_limit, adjacent_limit = 9, 12
    assert _poisson_tail(1.0, fixed_limit) < 1e-5 and _poisson_tail(2.0, adjacent_limit) < 1e-5
    position = _positions_after_one_hop()
    fixed = sum(position[i] == i for i in range(ITEMS))
    adjacent = sum(abs(position[i + 1] - position[i]) == 1 for i in range(ITEMS - 1))
    assert fixed < fixed_limit, f"{fixed} records kept their position"
    assert adjacent < adjacent_limit, f"{adjacent} neighbours stayed neighbours"


def test_each_output_position_is_equally_likely() -> None:
    """Over 40 hops of 8 items, where record 0 ends up is uniform over the 8 positions:
    chi-square with 7 degrees of freedom below 24.32 (false-alarm rate 0.001). A hop that
    does not shuffle puts it at position 0 every time (chi-square 280)."""
    party, leader = _keys(2)
    counts = [0] * 8
    for _ in range(40):
        ctx = _context([party, leader])
        records = [bytes([i]) for i in range(8)]
        opened = open_records(peel_layer(seal_records(records, ctx), party, 0, ctx), leader, ctx)
        counts[opened.index(b"\x00")] += 1
    expected = 40 / 8
    chi_square = sum((c - expected) ** 2 / expected for c in counts)
    assert chi_square < 24.32, f"record 0's positions {counts} are not uniform"


def _leader_layer_only(inner: bytes) -> tuple[list[bytes], X25519PrivateKey, UnionContext]:
    """`inner` (an innermost plaintext built by hand) under the leader's layer alone."""
    party, leader = _keys(2)
    ctx = _context([party, leader])
    return _seal_innermost(astuple(ctx), [inner]), leader, ctx


def test_the_decoder_reads_a_well_formed_record() -> None:
    inner = INNER_HEADER.pack(0, 3) + b"abc" + bytes(RECORD_SIZE - 3)
    items, leader, ctx = _leader_layer_only(inner)
    assert open_records(items, leader, ctx) == [b"abc"]


@pytest.mark.parametrize(
    ("what", "inner"),
    [
        (
            "length beyond the record size",
            INNER_HEADER.pack(0, RECORD_SIZE + 1) + b"x" * RECORD_SIZE,
        ),
        ("length field at its maximum", INNER_HEADER.pack(0, 0xFFFF) + b"x" * RECORD_SIZE),
        ("non-zero padding", INNER_HEADER.pack(0, 3) + b"abc" + b"\x01" + bytes(RECORD_SIZE - 4)),
        ("non-zero last byte", INNER_HEADER.pack(0, 0) + bytes(RECORD_SIZE - 1) + b"\x80"),
        ("dummy with bytes in its padding", INNER_HEADER.pack(1, 0) + b"\x07" * RECORD_SIZE),
        ("unknown kind", INNER_HEADER.pack(2, 0) + bytes(RECORD_SIZE)),
    ],
)
def test_the_decoder_refuses_a_malformed_innermost_record(what: str, inner: bytes) -> None:
    items, leader, ctx = _leader_layer_only(inner)
    with pytest.raises(WireFormatError, match="malformed innermost"):
        open_records(items, leader, ctx)


def test_route_keys_must_be_distinct() -> None:
    """A repeated key would let one key holder strip two layers (two hops in one)."""
    party, leader = _keys(2)
    key = party.public_key().public_bytes_raw()
    other = leader.public_key().public_bytes_raw()
    with pytest.raises(ValueError, match="distinct"):
        UnionContext(b"s" * 16, 0, (key, key, other), RECORD_SIZE)
    with pytest.raises(ValueError, match="distinct"):
        UnionContext(b"s" * 16, 0, (key, other, other), RECORD_SIZE)


@pytest.mark.parametrize(
    ("field", "match"),
    [
        ("session", "session id"),
        ("round", "round"),
        ("short route", "at least one party"),
        ("key size", "32-byte"),
        ("record size 0", "record_size"),
        ("record size too big", "record_size"),
    ],
)
def test_the_union_context_refuses_malformed_fields(field: str, match: str) -> None:
    keys = tuple(k.public_key().public_bytes_raw() for k in _keys(3))
    values: dict[str, Any] = {
        "session_id": b"s" * 16,
        "round": 0,
        "route": keys,
        "record_size": RECORD_SIZE,
    }
    changes: dict[str, dict[str, Any]] = {
        "session": {"session_id": b""},
        "round": {"round": -1},
        "short route": {"route": keys[:1]},
        "key size": {"route": (keys[0][:31], *keys[1:])},
        "record size 0": {"record_size": 0},
        "record size too big": {"record_size": 0x10000},
    }
    with pytest.raises(ValueError, match=match):
        UnionContext(**{**values, **changes[field]})


@pytest.mark.parametrize("parallelism", [Parallelism(2, 1), Parallelism(1)])
def test_opening_in_chunks_gives_what_opening_the_whole_batch_gives(
    parallelism: Parallelism,
) -> None:
    party, leader = _keys(2)
    ctx = _context([party, leader])
    records = [b"r%d" % i for i in range(60)]
    stripped = peel_layer(seal_records(records, ctx, pad_to=70), party, 0, ctx)
    with ChunkedOpen(leader, ctx, parallelism, len(stripped)) as opening:
        for start in range(0, 70, 25):
            opening.add(stripped[start : start + 25])
        assert opening.records() == open_records(stripped, leader, ctx)


def test_opening_in_chunks_refuses_a_repeat_the_wrong_key_and_a_bad_item() -> None:
    party, leader = _keys(2)
    ctx = _context([party, leader])
    stripped = peel_layer(seal_records([b"a", b"b", b"c"], ctx), party, 0, ctx)
    with pytest.raises(ValueError, match="not the route's key"):
        ChunkedOpen(party, ctx, Parallelism(1), 3)
    with ChunkedOpen(leader, ctx, Parallelism(1), 4) as opening:
        opening.add(stripped[:2])
        with pytest.raises(IntegrityError, match="repeats an item"):
            opening.add([stripped[0]])
    tampered = stripped[1][:-1] + bytes([stripped[1][-1] ^ 1])
    with ChunkedOpen(leader, ctx, Parallelism(2, 1), 3) as opening:
        opening.add([stripped[0]])
        opening.add([tampered, stripped[2]])
        with pytest.raises(IntegrityError, match="failed authentication"):
            opening.records()


@pytest.mark.parametrize("parallelism", [Parallelism(2, 1), Parallelism(1)])
def test_peeling_in_chunks_gives_what_peeling_the_whole_batch_gives(
    parallelism: Parallelism,
) -> None:
    """A hop peels its input chunk by chunk (on worker processes or not) and shuffles the whole:
    the next hop and the leader open the same records as after a one-piece peel, the order
    is shuffled, and the hop's checks hold with chunks as without."""
    parties, leader = _keys(2), _keys(1)[0]
    ctx = _context([*parties, leader])
    records = [b"r%d" % i for i in range(60)]
    sealed = seal_records(records, ctx, pad_to=70)
    with ChunkedPeel(parties[0], 0, ctx, parallelism, len(sealed)) as peeling:
        for start in range(0, 70, 25):
            peeling.add(sealed[start : start + 25])
        first = peeling.batch()
    assert sorted(open_records(peel_layer(first, parties[1], 1, ctx), leader, ctx)) == sorted(
        records
    )
    assert sorted(first) == sorted(peel_layer(sealed, parties[0], 0, ctx))
    with pytest.raises(ValueError, match="not the route's key"):
        ChunkedPeel(parties[1], 0, ctx, parallelism, 70)
    with ChunkedPeel(parties[0], 0, ctx, parallelism, 70) as peeling:
        peeling.add(sealed[:2])
        with pytest.raises(IntegrityError, match="repeats an item"):
            peeling.add([sealed[0]])
    tampered = sealed[1][:-1] + bytes([sealed[1][-1] ^ 1])
    with ChunkedPeel(parties[0], 0, ctx, parallelism, 3) as peeling:
        peeling.add([sealed[0]])
        peeling.add([tampered, sealed[2]])
        with pytest.raises(IntegrityError, match="failed authentication at hop 0"):
            peeling.batch()


def test_a_packed_chunk_of_the_wrong_item_size_or_a_reused_key_and_nonce_is_refused() -> None:
    """Chunks arrive packed: one of another item size is refused by its size before any item is
    decrypted, and an item reusing an earlier item's ephemeral key and nonce (an exact copy,
    or a copy with another body that would otherwise fail only as tampered) is a repeat."""
    parties, leader = _keys(2), _keys(1)[0]
    ctx = _context([*parties, leader])
    sealed = seal_records([b"r%d" % i for i in range(6)], ctx)
    short = Packed.of([item[:-LAYER_OVERHEAD] for item in sealed[:2]])
    with (
        ChunkedPeel(parties[0], 0, ctx, Parallelism(1), 6) as peeling,
        pytest.raises(WireFormatError, match=f"of {ctx.item_size(1)} bytes at hop 0"),
    ):
        peeling.add(short)
    with ChunkedPeel(parties[0], 0, ctx, Parallelism(1), 6) as peeling:
        peeling.add(Packed.of(sealed[:3]))
        other_body = sealed[0][:44] + sealed[3][44:]
        with pytest.raises(IntegrityError, match="repeats an item"):
            peeling.add(Packed.of([sealed[3], other_body]))


def test_the_party_layers_are_sealed_where_the_leader_layer_is() -> None:
    """An owner's sealing runs where its items are, leader layer and party layers in one pass
    (worker processes, or the daemon's idle key workers): the caller adds no layer of its own
    to what the sealer returns, and the party layers still share one ephemeral key per hop
    over the whole batch, however the sealer split it."""
    parties, leader = _keys(2), _keys(1)[0]
    ctx = _context([*parties, leader])
    returned: list[list[bytes]] = []

    def sealer(context: Any, items: list[bytes], outer: Any) -> list[bytes]:
        halves = [items[: len(items) // 2], items[len(items) // 2 :]]
        sealed = [s for half in halves for s in _seal_innermost(context, half, outer=outer)]
        returned.append(sealed)
        return sealed

    records = [b"r%d" % i for i in range(40)]
    sealed = seal_records(records, ctx, leader_layer=sealer)
    assert sealed == returned[0]
    assert len({item[:32] for item in sealed}) == 1  # hop 0's key: one per owner batch
    middle = peel_layer(sealed, parties[0], 0, ctx)
    assert len({item[:32] for item in middle}) == 1  # hop 1's key, likewise
    assert sorted(open_records(peel_layer(middle, parties[1], 1, ctx), leader, ctx)) == sorted(
        records
    )
