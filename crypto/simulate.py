"""Every role of each protocol, run in one process.

These functions are the reference message flow for the party daemon and the leader: each step
calls the role's public function and passes on the bytes it would send, parsed back by the
receiver exactly as off the wire. Tests use them to compare against plain computations; the
benchmark uses the optional `Stopwatch` to charge compute time to the role that spends it.
"""

from __future__ import annotations

import secrets
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from cryptography import x509
from numpy.typing import ArrayLike

from fedanon.crypto.commutative import (
    SraKey,
    decode,
    decrypt_batch,
    distinct,
    encode,
    encrypt_batch,
    pack_elements,
    unpack_elements,
)
from fedanon.crypto.identity import Identity
from fedanon.crypto.keyshare import ONION_UNION, PAIRWISE_SUM, create_key_share, verify_key_share
from fedanon.crypto.onion_union import (
    UnionContext,
    build_route,
    open_records,
    pack_batch,
    peel_layer,
    seal_records,
    unpack_batch,
)
from fedanon.crypto.pairwise import PairwiseAggregator, PairwiseMasker
from fedanon.crypto.parallel import SEQUENTIAL, Parallelism
from fedanon.crypto.secure_sum import add_vector, start_round

LEADER = "leader"


class Stopwatch:
    """Seconds charged to (role, phase): e.g. ('p0', 'setup'), ('leader', 'open').

    By default CPU time of this process rather than wall time, so that other load on a shared
    machine does not count as the protocol's compute. Work done in worker processes
    (`fedanon.crypto.parallel`) is not CPU time of this process, so timing it needs a wall `clock`.
    """

    def __init__(self, clock: Callable[[], float] = time.process_time) -> None:
        self.clock = clock
        self.seconds: defaultdict[tuple[str, str], float] = defaultdict(float)

    @contextmanager
    def measure(self, role: str, phase: str) -> Iterator[None]:
        """Add the time (by `clock`) of the `with` body to (`role`, `phase`)."""
        start = self.clock()
        try:
            yield
        finally:
            self.seconds[role, phase] += self.clock() - start

    def phase(self, phase: str) -> dict[str, float]:
        """Seconds per role spent in `phase`."""
        return {role: t for (role, p), t in self.seconds.items() if p == phase}


def ring_sum(vectors: Sequence[ArrayLike], stopwatch: Stopwatch | None = None) -> np.ndarray:
    """Ring mode: the leader masks, parties p0..p{n-1} add in order, the leader unmasks."""
    clock = stopwatch or Stopwatch()
    with clock.measure(LEADER, "round"):
        mask, payload = start_round(np.size(vectors[0]))
    for index, vector in enumerate(vectors):
        with clock.measure(f"p{index}", "round"):
            payload = add_vector(payload, vector)
    with clock.measure(LEADER, "round"):
        return mask.unmask(payload)


def pairwise_sum(
    vectors: Sequence[ArrayLike],
    identities: Sequence[Identity],
    ca_certificate: x509.Certificate,
    round_: int = 0,
    stopwatch: Stopwatch | None = None,
) -> np.ndarray:
    """Pairwise-mask mode for one round of a fresh session, parties named by `identities`.

    Setup: each party publishes a signed X25519 key; the leader relays all of them; each party
    verifies every share it receives. Round: each party sends its masked share to the leader.
    """
    clock = stopwatch or Stopwatch()
    session_id = secrets.token_bytes(16)
    roster = [identity.name for identity in identities]
    private_keys, announcements = {}, {}
    for identity in identities:
        with clock.measure(identity.name, "setup"):
            private_keys[identity.name], announcements[identity.name] = create_key_share(
                identity, session_id, PAIRWISE_SUM
            )
    shares = {}
    for identity, vector in zip(identities, vectors, strict=True):
        with clock.measure(identity.name, "setup"):
            peers = [
                verify_key_share(
                    message, ca_certificate, session_id, PAIRWISE_SUM, name, expected_role="party"
                )
                for name, message in announcements.items()
                if name != identity.name
            ]
            masker = PairwiseMasker(
                identity.name, private_keys[identity.name], peers, roster, session_id
            )
        with clock.measure(identity.name, "round"):
            shares[identity.name] = masker.masked_share(round_, vector)
    with clock.measure(LEADER, "round"):
        return PairwiseAggregator(roster, session_id).combine(round_, shares)


def onion_union(
    batches: Sequence[Sequence[bytes]],
    identities: Sequence[Identity],
    leader: Identity,
    ca_certificate: x509.Certificate,
    record_size: int,
    pad_to: int | None = None,
    stopwatch: Stopwatch | None = None,
    parallelism: Parallelism = SEQUENTIAL,
) -> list[bytes]:
    """Layered-encryption union: batches[i] belongs to identities[i]; ring order as given.

    Setup: everyone (parties and leader) publishes a signed X25519 key; each party verifies them
    and builds the route. Run: owners seal; the sealed batches are merged and go to the first
    party; each party peels and shuffles; the leader opens. Owners and leader use `parallelism`
    for their per-record layer.
    """
    clock = stopwatch or Stopwatch()
    session_id = secrets.token_bytes(16)
    ring = [identity.name for identity in identities]
    private_keys, announcements = {}, []
    for identity in (*identities, leader):
        with clock.measure(identity.name, "setup"):
            private_keys[identity.name], message = create_key_share(
                identity, session_id, ONION_UNION
            )
        announcements.append(message)
    contexts = {}
    for identity in (*identities, leader):
        with clock.measure(identity.name, "setup"):
            peers = [
                verify_key_share(message, ca_certificate, session_id, ONION_UNION)
                for message in announcements
            ]
            contexts[identity.name] = UnionContext(
                session_id, 0, build_route(peers, ring), record_size
            )
    merged: list[bytes] = []
    for identity, records in zip(identities, batches, strict=True):
        with clock.measure(identity.name, "seal"):
            sealed = seal_records(records, contexts[identity.name], pad_to, parallelism)
            message = pack_batch(sealed)
        merged.extend(unpack_batch(message))
    message = pack_batch(merged)
    for hop, identity in enumerate(identities):
        with clock.measure(identity.name, "peel"):
            peeled = peel_layer(
                unpack_batch(message), private_keys[identity.name], hop, contexts[identity.name]
            )
            message = pack_batch(peeled)
    with clock.measure(leader.name, "open"):
        return open_records(
            unpack_batch(message), private_keys[leader.name], contexts[leader.name], parallelism
        )


def dedup_union(sets: Sequence[Iterable[bytes]], stopwatch: Stopwatch | None = None) -> list[bytes]:
    """Commutative-encryption union without duplicates; sets[i] belongs to party p{i}.

    Each owner's encoded set travels the whole ring (every party encrypts and shuffles it) and
    reaches the leader fully encrypted; the leader merges, removes duplicates, adds its own layer
    and shuffles; the parties then each remove their layer (and shuffle), and the leader removes
    the last one, so only the leader sees the plaintext union.
    """
    clock = stopwatch or Stopwatch()
    n = len(sets)
    keys = []
    for index in range(n):
        with clock.measure(f"p{index}", "setup"):
            keys.append(SraKey.generate())
    with clock.measure(LEADER, "setup"):
        leader_key = SraKey.generate()
    fully_encrypted: list[int] = []
    for owner, values in enumerate(sets):
        with clock.measure(f"p{owner}", "encrypt"):
            message = pack_elements(encrypt_batch(keys[owner], map(encode, set(values))))
        for step in range(1, n):
            holder = (owner + step) % n
            with clock.measure(f"p{holder}", "encrypt"):
                message = pack_elements(encrypt_batch(keys[holder], unpack_elements(message)))
        with clock.measure(LEADER, "dedup"):
            fully_encrypted.extend(unpack_elements(message))
    with clock.measure(LEADER, "dedup"):
        message = pack_elements(encrypt_batch(leader_key, distinct(fully_encrypted)))
    for index in range(n):
        with clock.measure(f"p{index}", "decrypt"):
            message = pack_elements(decrypt_batch(keys[index], unpack_elements(message)))
    with clock.measure(LEADER, "decrypt"):
        return sorted(decode(x) for x in decrypt_batch(leader_key, unpack_elements(message)))
