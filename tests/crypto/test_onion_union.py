"""Layered-encryption union: multiset correctness, rejection of tampered, replayed or
misrouted batches, and the same records and errors with the per-record layer in worker
processes."""

from __future__ import annotations

import secrets
from collections import Counter

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from fedanon.crypto.errors import (
    CryptoError,
    IdentityError,
    IntegrityError,
    MissingPartyError,
    WireFormatError,
)
from fedanon.crypto.keyshare import PeerKey
from fedanon.crypto.onion_union import (
    LAYER_OVERHEAD,
    UnionContext,
    build_route,
    open_records,
    pack_batch,
    peel_layer,
    seal_records,
    unpack_batch,
)
from fedanon.crypto.parallel import Parallelism
from fedanon.crypto.simulate import onion_union

RECORD_SIZE = 24
# Every batch goes to worker processes, in chunks of 2 items for the 15 of `Ring.sealed`.
POOLED = Parallelism(workers=2, min_records=1)


@settings(max_examples=40, deadline=None)
@given(
    batches=st.lists(
        st.lists(st.binary(max_size=RECORD_SIZE), max_size=12), min_size=1, max_size=5
    ),
    padding=st.integers(0, 3),
)
def test_union_is_the_multiset_union(federation, batches, padding) -> None:
    pad_to = max(map(len, batches)) + padding if padding else None
    n = len(batches)
    result = onion_union(
        batches,
        federation.parties[:n],
        federation.leader,
        federation.ca.certificate,
        RECORD_SIZE,
        pad_to=pad_to,
    )
    assert Counter(result) == Counter(record for batch in batches for record in batch)


def test_duplicates_across_parties_are_kept(federation) -> None:
    batches = [[b"x", b"y"], [b"x"], [b"x", b""]]
    result = onion_union(
        batches, federation.parties[:3], federation.leader, federation.ca.certificate, 4
    )
    assert sorted(result) == [b"", b"x", b"x", b"x", b"y"]


class Ring:
    """Three parties and a leader with raw session keys (key authentication is tested apart)."""

    def __init__(self, n: int = 3, session_id: bytes | None = None, round_: int = 0) -> None:
        self.keys = [X25519PrivateKey.generate() for _ in range(n + 1)]
        self.ctx = self.context(session_id or secrets.token_bytes(16), round_)

    def context(self, session_id: bytes, round_: int) -> UnionContext:
        route = tuple(key.public_key().public_bytes_raw() for key in self.keys)
        return UnionContext(session_id, round_, route, RECORD_SIZE)

    def sealed(self, ctx: UnionContext | None = None, owners: int = 3) -> list[bytes]:
        ctx = ctx or self.ctx
        batch: list[bytes] = []
        for owner in range(owners):
            batch += seal_records([f"o{owner}r{i}".encode() for i in range(5)], ctx)
        return batch

    def run(self, batch: list[bytes], ctx: UnionContext | None = None) -> list[bytes]:
        ctx = ctx or self.ctx
        for hop in range(ctx.leader_hop):
            batch = peel_layer(batch, self.keys[hop], hop, ctx)
        return open_records(batch, self.keys[-1], ctx)


def test_ring_helper_round_trips() -> None:
    ring = Ring()
    assert len(ring.run(ring.sealed())) == 15


def test_flipped_byte_is_rejected() -> None:
    ring = Ring()
    batch = ring.sealed()
    for position in (0, 40, len(batch[3]) - 1):  # key, nonce, tag
        tampered = list(batch)
        item = bytearray(tampered[3])
        item[position] ^= 1
        tampered[3] = bytes(item)
        with pytest.raises(IntegrityError):
            ring.run(tampered)


def test_low_order_ephemeral_key_is_rejected() -> None:
    ring = Ring()
    batch = ring.sealed()
    batch[0] = bytes(32) + batch[0][32:]  # the all-zero point gives an all-zero shared secret
    with pytest.raises(IntegrityError, match="invalid key"):
        ring.run(batch)


def test_tampering_between_hops_is_caught_by_the_next_hop() -> None:
    ring = Ring()
    batch = peel_layer(ring.sealed(), ring.keys[0], 0, ring.ctx)
    item = bytearray(batch[0])
    item[60] ^= 0x80  # inside the ciphertext, far from p1's own key and nonce
    batch[0] = bytes(item)
    with pytest.raises(IntegrityError, match="hop 1"):
        peel_layer(batch, ring.keys[1], 1, ring.ctx)


def test_batch_replayed_in_a_later_round_or_other_session_is_rejected() -> None:
    ring = Ring(round_=4)
    old_batch = ring.sealed()
    assert len(ring.run(old_batch)) == 15
    with pytest.raises(IntegrityError):
        ring.run(old_batch, ring.context(ring.ctx.session_id, 5))
    with pytest.raises(IntegrityError):
        ring.run(old_batch, ring.context(secrets.token_bytes(16), 4))


def test_replayed_record_within_a_batch_is_rejected() -> None:
    ring = Ring()
    batch = ring.sealed()
    with pytest.raises(IntegrityError, match="repeats"):
        ring.run([*batch, batch[0]])


def test_reordered_hops_are_rejected() -> None:
    ring = Ring()
    batch = ring.sealed()
    # The batch skips p0 and goes straight to p1.
    with pytest.raises(CryptoError):
        peel_layer(batch, ring.keys[1], 1, ring.ctx)
    # Parties disagree on the ring order: p1 sits at hop 0 in their route, p0 at hop 1.
    swapped = [ring.keys[1], ring.keys[0], *ring.keys[2:]]
    route = tuple(key.public_key().public_bytes_raw() for key in swapped)
    ctx = UnionContext(ring.ctx.session_id, 0, route, RECORD_SIZE)
    with pytest.raises(IntegrityError, match="hop 0"):
        peel_layer(batch, swapped[0], 0, ctx)


def test_serialized_batch_round_trip_and_truncation() -> None:
    ring = Ring()
    batch = ring.sealed()
    data = pack_batch(batch)
    assert unpack_batch(data) == batch
    with pytest.raises(WireFormatError):
        unpack_batch(data[:-1])
    short = list(batch)
    short[0] = short[0][:-1]
    with pytest.raises(WireFormatError):
        ring.run(short)


def test_all_items_have_the_same_size_at_every_hop() -> None:
    ring = Ring()
    batch = seal_records([b"", b"a", b"b" * RECORD_SIZE], ring.ctx, pad_to=5)
    for hop in range(ring.ctx.leader_hop):
        assert {len(item) for item in batch} == {ring.ctx.item_size(hop)}
        batch = peel_layer(batch, ring.keys[hop], hop, ring.ctx)
    assert {len(item) for item in batch} == {3 + RECORD_SIZE + LAYER_OVERHEAD}


def test_leader_cannot_group_records_by_owner() -> None:
    """Party layers share one ephemeral key per owner batch; the leader's layer never does."""
    ring = Ring()
    batch = ring.sealed(owners=3)
    assert len({item[:32] for item in batch}) == 3  # hop 0 sees 3 owner groups
    for hop in range(ring.ctx.leader_hop):
        batch = peel_layer(batch, ring.keys[hop], hop, ring.ctx)
    assert len({item[:32] for item in batch}) == len(batch) == 15


def test_padding_hides_counts_and_dummies_are_dropped() -> None:
    ring = Ring()
    sealed = [seal_records([b"r"] * k, ring.ctx, pad_to=6) for k in (0, 2, 6)]
    assert [len(batch) for batch in sealed] == [6, 6, 6]
    assert ring.run([item for batch in sealed for item in batch]) == [b"r"] * 8
    with pytest.raises(ValueError, match="more records than pad_to=6") as refused:
        seal_records([b"r"] * 7, ring.ctx, pad_to=6)
    assert "7" not in str(refused.value)  # the count it hides is not in the error either
    with pytest.raises(ValueError):
        seal_records([b"x" * (RECORD_SIZE + 1)], ring.ctx)


def test_wrong_key_for_hop_is_refused() -> None:
    ring = Ring()
    with pytest.raises(ValueError):
        peel_layer(ring.sealed(), ring.keys[1], 0, ring.ctx)


def test_route_from_key_shares() -> None:
    keys = {name: secrets.token_bytes(32) for name in ("a", "b", "c", "boss")}
    roles = {"boss": "leader"}
    peers = [PeerKey(name, roles.get(name, "party"), key) for name, key in keys.items()]
    assert build_route(peers, ["c", "a", "b"]) == (keys["c"], keys["a"], keys["b"], keys["boss"])
    with pytest.raises(MissingPartyError, match="from d"):
        build_route(peers, ["a", "b", "c", "d"])
    with pytest.raises(IdentityError):
        build_route([p for p in peers if p.role == "party"], ["a", "b", "c"])
    with pytest.raises(IntegrityError, match="outside"):
        build_route(peers, ["a", "b"])


def test_pooled_open_gives_the_same_records_in_the_same_order() -> None:
    ring = Ring()
    batch = [item for k in (0, 3, 5) for item in seal_records([b"r%d" % k] * k, ring.ctx, 5)]
    for hop in range(ring.ctx.leader_hop):
        batch = peel_layer(batch, ring.keys[hop], hop, ring.ctx)
    in_process = open_records(batch, ring.keys[-1], ring.ctx)
    assert sorted(in_process) == [b"r3"] * 3 + [b"r5"] * 5  # the 7 dummies are dropped
    assert open_records(batch, ring.keys[-1], ring.ctx, POOLED) == in_process
    at_threshold = Parallelism(workers=2, min_records=len(batch))
    assert open_records(batch, ring.keys[-1], ring.ctx, at_threshold) == in_process


def test_pooled_seal_keeps_order_and_the_per_record_leader_keys(monkeypatch) -> None:
    """Chunks sealed in different workers still get distinct leader keys (no RNG state forked
    into two workers) and one party key per owner batch; the records come out in order."""
    monkeypatch.setattr("fedanon.crypto.shuffle.secure_permutation", np.arange)  # a hop's shuffle
    ring = Ring()
    records = [b"record %d" % i for i in range(15)]
    batch = seal_records(records, ring.ctx, pad_to=17, parallelism=POOLED)
    assert {len(item) for item in batch} == {ring.ctx.item_size(0)}
    assert len({item[:32] for item in batch}) == 1
    for hop in range(ring.ctx.leader_hop):
        batch = peel_layer(batch, ring.keys[hop], hop, ring.ctx)
    assert len({item[:32] for item in batch}) == len(batch) == 17
    assert open_records(batch, ring.keys[-1], ring.ctx) == records


def test_every_layer_of_every_item_has_its_own_nonce() -> None:
    """The nonces of a seal come from one CSPRNG draw, cut per item and layer: no two layers
    of a batch (the same AES key at a party layer: one ephemeral key per owner batch) share a
    nonce, and none is all zeros."""
    ring = Ring()
    batch = seal_records([b"r%d" % i for i in range(20)], ring.ctx, pad_to=25)
    nonces = []
    for hop in range(ring.ctx.leader_hop + 1):
        nonces += [item[32:44] for item in batch]
        if hop < ring.ctx.leader_hop:
            batch = peel_layer(batch, ring.keys[hop], hop, ring.ctx)
    assert len(nonces) == 25 * 4 and len(set(nonces)) == len(nonces)
    assert bytes(12) not in nonces


def _fully_peeled(ring: Ring) -> list[bytes]:
    batch = ring.sealed()
    for hop in range(ring.ctx.leader_hop):
        batch = peel_layer(batch, ring.keys[hop], hop, ring.ctx)
    return batch


def _flip_tag(item: bytes) -> bytes:
    return item[:-1] + bytes([item[-1] ^ 1])


@pytest.mark.parametrize(
    ("faults", "error"),
    [
        ({13: _flip_tag}, IntegrityError),
        ({13: lambda item: bytes(32) + item[32:]}, IntegrityError),
        ({13: lambda item: item[:-1]}, WireFormatError),
        # Two bad items in different chunks: the first in batch order names the error.
        ({2: _flip_tag, 13: lambda item: bytes(32) + item[32:]}, IntegrityError),
        ({2: lambda item: bytes(32) + item[32:], 13: _flip_tag}, IntegrityError),
    ],
    ids=["tag", "key", "size", "tag-then-key", "key-then-tag"],
)
def test_pooled_open_raises_the_same_error_as_in_process(faults, error) -> None:
    ring = Ring()
    batch = _fully_peeled(ring)
    for index, fault in faults.items():
        batch[index] = fault(batch[index])
    with pytest.raises(error) as in_process:
        open_records(batch, ring.keys[-1], ring.ctx)
    with pytest.raises(error) as pooled:
        open_records(batch, ring.keys[-1], ring.ctx, POOLED)
    assert type(pooled.value) is type(in_process.value)
    assert str(pooled.value) == str(in_process.value)
    assert "hop 3" in str(pooled.value)


def test_pooled_open_checks_the_whole_batch_before_splitting_it() -> None:
    """A replayed item is caught even when its copies would land in different chunks."""
    ring = Ring()
    batch = _fully_peeled(ring)
    with pytest.raises(IntegrityError, match="repeats"):
        open_records([*batch, batch[0]], ring.keys[-1], ring.ctx, POOLED)
    with pytest.raises(ValueError, match="not the route's key"):
        open_records(batch, ring.keys[0], ring.ctx, POOLED)
