"""A union hop's part in resuming an interrupted layered union in its round (#28, rejoin).

After a lost party rejoined, the leader sends the strip again as it was: a hop that already
peeled the batch forwards the output it kept, and a hop that restarted peels only the batch it
sealed before its restart, shuffled exactly as then (its shuffle seed is sealed with the
session). Each round a hop peels one batch and seals its records once: anything else is refused.
Real keys and layers (crypto/onion_union.py); the daemons' side is
tests/distributed/test_rejoin.py.
"""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.onion_union import UnionContext, seal_records
from fedanon.crypto.packed import Packed
from fedanon.crypto.parallel import SEQUENTIAL
from fedanon.crypto.shuffle import keyed_permutation
from fedanon.party.errors import CannotResume, ProtocolError, status_of
from fedanon.party.union import UnionRole, chunk_digest

RECORD_SIZE = 64
ROUND = 7


@pytest.fixture(scope="module")
def keys() -> list[X25519PrivateKey]:
    return [X25519PrivateKey.generate() for _ in range(3)]  # two parties, then the leader


def context(keys: list[X25519PrivateKey], round_: int = ROUND) -> UnionContext:
    route = tuple(key.public_key().public_bytes_raw() for key in keys)
    return UnionContext(b"session-resume", round_, route, RECORD_SIZE)


def batch(keys: list[X25519PrivateKey], tag: str, count: int = 12) -> Packed:
    return Packed.of(seal_records([f"{tag}{i}".encode() for i in range(count)], context(keys)))


def chunks_of(items: Packed, pieces: int) -> list[Packed]:
    per = -(-len(items) // pieces)
    rows = items.items()
    return [Packed.of(rows[i : i + per]) for i in range(0, len(rows), per)]


class Sealed:
    """What a rejoinable session's hop seals (party/rejoin.py's callbacks, without a file)."""

    def __init__(self) -> None:
        self.peeled: list[tuple[int, bytes]] = []
        self.collected: list[int] = []


def hop(keys: list[X25519PrivateKey], sealed: Sealed, secret: bytes = b"s" * 32) -> UnionRole:
    role = UnionRole(keys[0], 0, SEQUENTIAL)
    role.strip_secret = secret
    role.on_peeled = lambda round_, digest: sealed.peeled.append((round_, digest))
    role.on_collected = sealed.collected.append
    return role


def strip(role: UnionRole, keys: list[X25519PrivateKey], chunks: list[Packed]) -> Packed | None:
    out = None
    for index, chunk in enumerate(chunks):
        out = role.strip_chunk(index, len(chunks), chunk, context(keys))
    return out


def test_a_hop_forwards_the_batch_it_peeled_again_and_refuses_another(
    keys: list[X25519PrivateKey],
) -> None:
    sealed = Sealed()
    role = hop(keys, sealed)
    chunks = chunks_of(batch(keys, "a"), 3)
    first = strip(role, keys, chunks)
    assert first is not None and len(first) == 12
    digest = hashlib.sha256(b"".join(chunk_digest(c) for c in chunks)).digest()
    assert sealed.peeled == [(ROUND, digest)]  # sealed before the output leaves
    # The leader's resend: the chunks before the last come from the replay cache; the last
    # one reaches the hop again, which forwards the very output it kept.
    again = role.strip_chunk(2, 3, chunks[2], context(keys))
    assert again is not None and again.data == first.data
    assert sealed.peeled == [(ROUND, digest)]  # nothing peeled a second time
    other = chunks_of(batch(keys, "b"), 3)
    for index in (0, 2):
        with pytest.raises(ProtocolError, match="second batch to strip in round 7"):
            role.strip_chunk(index, 3, other[index], context(keys))


def test_a_restarted_hop_shuffles_its_sealed_batch_as_before_and_refuses_another(
    keys: list[X25519PrivateKey],
) -> None:
    before, after = Sealed(), Sealed()
    chunks = chunks_of(batch(keys, "a"), 2)
    first = strip(hop(keys, before), keys, chunks)
    assert first is not None
    # The restarted daemon: its sealed secret and the (round, digest) of the batch it peeled.
    restarted = hop(keys, after)
    restarted.sealed_strip = before.peeled[0]
    again = strip(restarted, keys, chunks)
    assert again is not None and again.data == first.data  # the next hop's cache matches
    changed = hop(keys, Sealed())
    changed.sealed_strip = before.peeled[0]
    with pytest.raises(ProtocolError, match="different batch to strip in round 7"):
        strip(changed, keys, chunks_of(batch(keys, "b"), 2))
    # Another secret (another session), or no rejoin at all: another shuffle.
    fresh = strip(hop(keys, Sealed(), secret=b"t" * 32), keys, chunks)
    plain = strip(UnionRole(keys[0], 0, SEQUENTIAL), keys, chunks)
    assert fresh is not None and plain is not None
    assert sorted(fresh.items()) == sorted(first.items()) == sorted(plain.items())
    assert fresh.data != first.data


def test_a_restarted_party_never_seals_its_records_twice_in_a_round(
    keys: list[X25519PrivateKey],
) -> None:
    sealed = Sealed()
    role = hop(keys, sealed)
    role.check_collect(ROUND)  # nothing sealed yet in this life or before
    role.collected(ROUND)
    assert sealed.collected == [ROUND]
    restarted = hop(keys, Sealed())
    restarted.sealed_collect = ROUND
    with pytest.raises(CannotResume) as refused:
        restarted.check_collect(ROUND)
    assert status_of(refused.value).name == "ABORTED"  # the leader starts a new round
    restarted.check_collect(ROUND + 1)


def test_the_keyed_permutation_is_a_permutation_fixed_by_its_seed() -> None:
    order = keyed_permutation(1000, b"seed")
    assert sorted(order.tolist()) == list(range(1000))
    assert keyed_permutation(1000, b"seed").tolist() == order.tolist()
    assert keyed_permutation(1000, b"seee").tolist() != order.tolist()
    assert keyed_permutation(1, b"seed").tolist() == [0]
    assert keyed_permutation(0, b"seed").tolist() == []


def test_a_hop_that_never_restarted_takes_round_zero(keys: list[X25519PrivateKey]) -> None:
    """A union right after the handshake runs as round 0 (the evaluate kind's): nothing sealed
    before is "round 0", so a live hop seals its records and peels its batch there."""
    role = hop(keys, Sealed())
    role.check_collect(0)
    route = tuple(key.public_key().public_bytes_raw() for key in keys)
    ctx = UnionContext(b"session-resume", 0, route, RECORD_SIZE)
    sealed = Packed.of(seal_records([b"r0", b"r1", b"r2"], ctx))
    peeled = role.strip_chunk(0, 1, sealed, ctx)
    assert peeled is not None and len(peeled) == 3
