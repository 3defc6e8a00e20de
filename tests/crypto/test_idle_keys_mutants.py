"""The idle-key workers (crypto/idle_keys.py) where a weakened pool would still seal: every
item of an uneven split, keys prepared for one leader only, no work beyond what the session
asked for, and readiness reported only for a full pool."""

from __future__ import annotations

from collections import Counter

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.idle_keys import IdleKeyWorkers
from fedanon.crypto.onion_union import UnionContext, open_records, peel_layer, seal_records
from tests.harness.wait import holds_for, wait_until

CAPACITY = 40  # 20 per worker: below one generation chunk (64), so a chunk could overshoot it


@pytest.fixture
def workers():
    pool = IdleKeyWorkers(2, CAPACITY, idle_after=0)
    pool.start()
    assert pool.wait_full(timeout=60)
    yield pool
    pool.close()


def route() -> tuple[list[X25519PrivateKey], UnionContext]:
    """A party key and the leader's key (the innermost layer), and their union context."""
    keys = [X25519PrivateKey.generate() for _ in range(2)]
    raw = tuple(k.public_key().public_bytes_raw() for k in keys)
    return keys, UnionContext(b"idle-keys-mutants", 4, raw, 16)


def opened(sealed: list[bytes], keys: list[X25519PrivateKey], ctx: UnionContext) -> Counter:
    return Counter(open_records(peel_layer(sealed, keys[0], 0, ctx), keys[1], ctx))


def wait_prepared(pool: IdleKeyWorkers, count: int) -> None:
    assert wait_until(lambda: pool.counts()[1] >= count, interval=0.02)


def stays(pool: IdleKeyWorkers, expected: tuple[int, int], seconds: float = 1.0) -> bool:
    """Whether the pool's counts stay `expected` for `seconds` (no background work)."""
    return holds_for(lambda: pool.counts() == expected, seconds)


def test_the_stock_stops_at_the_capacity(workers) -> None:
    assert workers.counts() == (CAPACITY, 0)
    assert stays(workers, (CAPACITY, 0))


def test_an_odd_number_of_items_is_sealed_whole(workers) -> None:
    """7 items over 2 workers: 4 + 3; every one is sealed and the leader opens all seven."""
    workers.busy()
    keys, ctx = route()
    records = [f"r{i}".encode() for i in range(7)]
    sealed = seal_records(records, ctx, leader_layer=workers.seal)
    assert len(sealed) == 7
    assert opened(sealed, keys, ctx) == Counter(records)


def test_a_new_leader_key_replaces_what_was_prepared_for_the_last_one(workers) -> None:
    """Prepared for another session's leader, then (without an idle in between, as after an
    eviction) for this one: the seal uses only keys exchanged with this leader's key."""
    workers.busy()
    keys, ctx = route()
    _, other = route()
    workers.prepare(other.route[-1], 20)
    wait_prepared(workers, 20)
    workers.prepare(ctx.route[-1], 10)
    wait_prepared(workers, 10)
    records = [f"r{i}".encode() for i in range(10)]
    sealed = seal_records(records, ctx, leader_layer=workers.seal)
    assert workers.last_keys == (10, 0)
    assert opened(sealed, keys, ctx) == Counter(records)


def test_preparation_stops_at_the_target_and_after_the_seal(workers) -> None:
    workers.busy()
    keys, ctx = route()
    workers.prepare(ctx.route[-1], 10)
    wait_prepared(workers, 10)
    assert stays(workers, (CAPACITY - 10, 10))  # 5 per worker, taken from the stock
    records = [f"r{i}".encode() for i in range(10)]
    sealed = seal_records(records, ctx, leader_layer=workers.seal)
    assert workers.last_keys == (10, 0)
    assert stays(workers, (CAPACITY - 10, 0))  # the union is sealed: nothing more prepared
    assert opened(sealed, keys, ctx) == Counter(records)


def test_readiness_is_not_reported_while_a_session_runs(workers) -> None:
    workers.busy()
    _, ctx = route()
    seal_records([b"x"] * 10, ctx, leader_layer=workers.seal)
    assert not workers.wait_full(timeout=0.5)
    workers.idle()
    assert workers.wait_full(timeout=60) and workers.counts() == (CAPACITY, 0)
