"""The daemon's idle key workers: keys generated before a session seal the leader layer of a
union the leader opens; no key seals two items, across seals too; no generation while busy."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from dataclasses import astuple

import pandas as pd
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fedanon.crypto.idle_keys import IdleKeyWorkers
from fedanon.crypto.keyshare import X25519_KEY_BYTES
from fedanon.crypto.onion_union import (
    UnionContext,
    open_records,
    peel_layer,
    seal_records,
)
from tests.harness.wait import holds_for, wait_until

SESSION = b"idle-keys-session"


@pytest.fixture
def workers():
    pool = IdleKeyWorkers(2, 300, idle_after=0)
    pool.start()
    assert pool.wait_full(timeout=60)
    yield pool
    pool.close()


def _route():
    keys = [X25519PrivateKey.generate() for _ in range(2)]
    return keys, UnionContext(
        SESSION, 4, tuple(k.public_key().public_bytes_raw() for k in keys), 16
    )


def _leader_keys(sealed: list[bytes], party: X25519PrivateKey, ctx: UnionContext) -> list[bytes]:
    return [item[:X25519_KEY_BYTES] for item in peel_layer(sealed, party, 0, ctx)]


def test_workers_fill_to_capacity_and_seal_a_union_the_leader_opens(workers) -> None:
    assert workers.held() == 300
    workers.busy()  # as the daemon is while a session runs (idle, it would refill at once)
    keys, ctx = _route()
    records = [f"record {i}".encode() for i in range(200)]
    sealed = seal_records(records, ctx, pad_to=210, leader_layer=workers.seal)
    assert workers.held() == 90  # each item took one key: 210 of 300
    opened = open_records(peel_layer(sealed, keys[0], 0, ctx), keys[1], ctx)
    assert Counter(opened) == Counter(records)


def test_no_key_seals_two_items_even_when_the_workers_run_dry(workers) -> None:
    """While busy the workers make no keys ahead; two seals of 250 use the 300 keys made while
    idle and 200 fresh ones: 500 distinct ephemeral keys."""
    workers.busy()
    keys, ctx = _route()
    first = seal_records([b"a"] * 250, ctx, leader_layer=workers.seal)
    second = seal_records([b"b"] * 250, ctx, leader_layer=workers.seal)
    assert workers.held() == 0
    ephemerals = _leader_keys(first, keys[0], ctx) + _leader_keys(second, keys[0], ctx)
    assert len(set(ephemerals)) == 500
    assert holds_for(lambda: workers.held() == 0, 0.3)  # still busy: nothing generated
    workers.idle()
    assert workers.wait_full(timeout=60) and workers.held() == 300


def test_an_error_in_a_worker_is_raised_in_the_caller_unchanged(workers) -> None:
    _, ctx = _route()
    broken = (b"", *astuple(ctx)[1:])  # an empty session id fails in the worker
    with pytest.raises(ValueError, match="session id must be non-empty"):
        workers.seal(broken, [b"x" * 19])
    assert workers.held() == 300  # and the workers still serve


def test_capacity_zero_starts_no_worker() -> None:
    pool = IdleKeyWorkers(2, 0)
    pool.start()
    assert not pool.running
    with pytest.raises(ValueError, match="at least one worker"):
        IdleKeyWorkers(0, 10)


def test_a_union_whose_key_worker_died_is_sealed_without_the_workers(workers) -> None:
    """The daemon's seal (party/union.py) falls back to fresh keys when a worker is gone."""
    from fedanon.crypto.parallel import SEQUENTIAL
    from fedanon.party.records import LocalRecords, table_batches
    from fedanon.party.union import UnionRole

    keys, ctx = _route()
    role = UnionRole(keys[0], 0, SEQUENTIAL, workers)
    role.route = ctx.route
    workers._processes[0].kill()
    workers._processes[0].join(timeout=10)
    local = LocalRecords(table_batches(pd.DataFrame({"v": [f"r{i}" for i in range(50)]})))
    sealed = role.seal(local, ctx, None)
    assert not workers.running
    opened = open_records(peel_layer(sealed, keys[0], 0, ctx), keys[1], ctx)
    assert Counter(opened) == Counter(local.expand()) and len(opened) == 50


def test_the_layer_kdf_is_ansi_x963_with_sha256() -> None:
    """The hand-rolled one-hash KDF (crypto/onion_union.py) equals the library's X9.63 KDF."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF

    from fedanon.crypto.onion_union import _LABEL, _Hop, _layer_cipher

    _, ctx = _route()
    hop = _Hop.of(ctx, 1)
    shared, epk = bytes(range(32)), bytes(range(32, 64))
    info = _LABEL + epk + ctx.route[1] + ctx.aad(1)
    key = X963KDF(hashes.SHA256(), 32, info).derive(shared)
    nonce, aad = bytes(12), ctx.aad(1)
    expected = AESGCM(key).encrypt(nonce, b"record", aad)
    assert _layer_cipher(shared, epk, hop).encrypt(nonce, b"record", aad) == expected


def test_generation_waits_until_the_daemon_has_been_idle_for_a_while() -> None:
    """No key is made in the first `idle_after` seconds after start-up or after a session."""
    began = time.monotonic()
    pool = IdleKeyWorkers(1, 40, idle_after=1.0)
    pool.start()
    try:
        assert pool.wait_full(timeout=60)
        assert time.monotonic() - began >= 1.0
        pool.busy()
        _, ctx = _route()
        seal_records([b"x"] * 40, ctx, leader_layer=pool.seal)
        assert pool.held() == 0
        ended = time.monotonic()
        pool.idle()
        assert pool.wait_full(timeout=60)
        assert time.monotonic() - ended >= 1.0
    finally:
        pool.close()


def _wait_prepared(pool: IdleKeyWorkers, count: int) -> None:
    wait_until(lambda: pool.counts()[1] >= count, interval=0.02)


def test_keys_prepared_for_the_leader_during_the_loop_seal_first(workers) -> None:
    """`prepare` exchanges stock keys with the leader's key in the background; the seal uses
    them before the stock; the leader opens every item and no key is used twice."""
    workers.busy()
    keys, ctx = _route()
    workers.prepare(ctx.route[-1], 100)
    _wait_prepared(workers, 100)
    assert workers.counts() == (200, 100)  # the prepared keys came out of the stock
    records = [f"r{i}".encode() for i in range(150)]
    sealed = seal_records(records, ctx, leader_layer=workers.seal)
    assert workers.last_keys == (100, 50)
    assert len(set(_leader_keys(sealed, keys[0], ctx))) == 150
    assert Counter(open_records(peel_layer(sealed, keys[0], 0, ctx), keys[1], ctx)) == Counter(
        records
    )


def test_keys_prepared_for_another_leader_are_never_used(workers) -> None:
    workers.busy()
    keys, ctx = _route()
    _, other = _route()
    workers.prepare(other.route[-1], 40)
    _wait_prepared(workers, 40)
    sealed = seal_records([b"x"] * 10, ctx, leader_layer=workers.seal)
    assert workers.last_keys == (0, 10)
    assert len(open_records(peel_layer(sealed, keys[0], 0, ctx), keys[1], ctx)) == 10
    workers.prepare(ctx.route[-1], 20)
    _wait_prepared(workers, 20)
    workers.idle()  # the session ended: what was prepared for it is dropped
    assert workers.counts()[1] == 0


def test_workers_of_a_killed_daemon_end_without_a_traceback() -> None:
    """A daemon killed outright never says "stop": its workers see their pipes close and must
    end quietly (a traceback in the daemon's log reads as a crash of the key workers)."""
    owner = (
        "import os, signal, sys\n"
        "from fedanon.crypto.idle_keys import IdleKeyWorkers\n"
        "pool = IdleKeyWorkers(2, 100000, idle_after=0)\n"
        "pool.start()\n"
        "print('started', flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    # stderr is inherited by the fork server and the workers: it ends when all of them are gone
    done = subprocess.run(
        [sys.executable, "-c", owner], capture_output=True, text=True, timeout=120
    )
    assert done.stdout == "started\n"
    assert "Traceback" not in done.stderr, done.stderr
