"""Leader-layer keys prepared before the records (the overlap of the layered union with the
specialization loop): same union, each key used once, bound to the route's leader."""

from __future__ import annotations

from collections import Counter

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.errors import IntegrityError
from fedanon.crypto.keyshare import X25519_KEY_BYTES
from fedanon.crypto.onion_union import (
    UnionContext,
    open_records,
    peel_layer,
    prepare_leader_ephemeral,
    seal_records,
)
from fedanon.crypto.prepared_keys import PreparedLeaderKeys
from tests.harness.wait import wait_until

SESSION = b"prepared-session"


def _route(n_parties: int = 2):
    keys = [X25519PrivateKey.generate() for _ in range(n_parties + 1)]
    route = tuple(k.public_key().public_bytes_raw() for k in keys)
    return keys, UnionContext(SESSION, 9, route, 32)


def _through_ring(sealed: list[bytes], keys, ctx: UnionContext) -> list[bytes]:
    for hop in range(ctx.leader_hop):
        sealed = peel_layer(sealed, keys[hop], hop, ctx)
    return open_records(sealed, keys[-1], ctx)


def test_prepared_keys_seal_a_union_the_leader_opens() -> None:
    keys, ctx = _route()
    records = [f"record {i}".encode() for i in range(6)]
    prepared = [prepare_leader_ephemeral(ctx.route[-1]) for _ in range(4)]
    sealed = seal_records(records, ctx, pad_to=8, prepared=prepared)
    assert Counter(_through_ring(sealed, keys, ctx)) == Counter(records)


def test_each_prepared_key_seals_one_item_and_the_rest_get_fresh_keys() -> None:
    """Peeling the party layers shows the leader-layer ephemeral key of every item: all are
    distinct, and the prepared ones are exactly the first items' keys."""
    keys, ctx = _route(1)
    prepared = [prepare_leader_ephemeral(ctx.route[-1]) for _ in range(3)]
    sealed = seal_records([b"a", b"b", b"c", b"d", b"e"], ctx, prepared=prepared)
    inner = peel_layer(sealed, keys[0], 0, ctx)
    ephemerals = [item[:X25519_KEY_BYTES] for item in inner]
    assert len(set(ephemerals)) == 5
    assert {epk for epk, _ in prepared} <= set(ephemerals)


def test_keys_prepared_for_another_leader_fail_authentication() -> None:
    keys, ctx = _route()
    stranger = X25519PrivateKey.generate().public_key().public_bytes_raw()
    sealed = seal_records([b"x"], ctx, prepared=[prepare_leader_ephemeral(stranger)])
    with pytest.raises(IntegrityError):
        _through_ring(sealed, keys, ctx)


def test_background_preparation_hands_each_key_over_once() -> None:
    """Keys made in the worker process seal a union the leader opens; a second take is empty."""
    keys, ctx = _route()
    preparing = PreparedLeaderKeys(ctx.route[-1], 40)
    # The first chunk, however loaded the host.
    made = wait_until(lambda: preparing.take() if preparing._futures[0].done() else [])
    assert len(made) == 40 and len({epk for epk, _ in made}) == 40
    assert preparing.take() == []
    records = [f"r{i}".encode() for i in range(40)]
    sealed = seal_records(records, ctx, prepared=made)
    assert Counter(_through_ring(sealed, keys, ctx)) == Counter(records)
