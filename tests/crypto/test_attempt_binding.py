"""A rerun without parties that dropped out is the next attempt of the same session (#28): its
pairwise masks, sparse graph and union contexts come from the session's keys bound to the
attempt, so nothing of one attempt is reused in or combines with another, and a party moves
only to the next attempt among a subsequence of its roster (federation/exclusion.py)."""

from __future__ import annotations

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.errors import IntegrityError
from fedanon.crypto.keyshare import PeerKey
from fedanon.crypto.pairwise import PairwiseAggregator, PairwiseMasker, sparse_neighbours
from fedanon.crypto.share_shuffle import PairKeys, ShuffleContext, ShuffleParty
from fedanon.crypto.wire import bytes_to_counts, unpack_frames
from fedanon.federation.exclusion import attempt_binding, rerun_refusal

SID = "ab" * 16
ROSTER = ["h1", "h2", "h3", "h4"]


def _maskers(roster: list[str], attempt: int, sparse: bool = False) -> dict[str, PairwiseMasker]:
    keys = {name: X25519PrivateKey.generate() for name in roster}
    peers = [PeerKey(n, "party", k.public_key().public_bytes_raw()) for n, k in keys.items()]
    sid = bytes.fromhex(SID)
    return {n: PairwiseMasker(n, k, peers, roster, sid, sparse, attempt) for n, k in keys.items()}


def _payload(share: bytes) -> np.ndarray:
    return bytes_to_counts(unpack_frames(b"FPS1", share, 6)[5])


def test_the_same_pair_secrets_give_independent_masks_in_the_next_attempt() -> None:
    """Same keys, roster, round and vector: the masked shares of attempts 0 and 1 differ in
    every element (their difference is not the vectors' difference, zero), and each
    attempt's shares still sum to the total."""
    keys = {name: X25519PrivateKey.generate() for name in ROSTER}
    peers = [PeerKey(n, "party", k.public_key().public_bytes_raw()) for n, k in keys.items()]
    sid = bytes.fromhex(SID)
    vectors = {n: np.arange(64, dtype=np.uint64) * (i + 1) for i, n in enumerate(ROSTER)}
    shares = {}
    for attempt in (0, 1):
        maskers = {
            n: PairwiseMasker(n, k, peers, ROSTER, sid, False, attempt) for n, k in keys.items()
        }
        shares[attempt] = {n: m.masked_share(3, vectors[n]) for n, m in maskers.items()}
        total = PairwiseAggregator(ROSTER, sid, attempt).combine(3, shares[attempt])
        assert np.array_equal(total, sum(vectors.values()))
    for name in ROSTER:
        difference = _payload(shares[1][name]) - _payload(shares[0][name])
        assert np.count_nonzero(difference) == difference.size  # not 0 = x - x


def test_a_share_of_another_attempt_does_not_combine() -> None:
    maskers = _maskers(ROSTER, 0)
    shares = {n: m.masked_share(0, np.ones(8, dtype=np.uint64)) for n, m in maskers.items()}
    with pytest.raises(IntegrityError, match="of attempt 0, not 1"):
        PairwiseAggregator(ROSTER, bytes.fromhex(SID), 1).combine(0, shares)


def test_the_sparse_graph_is_drawn_again_for_the_attempt() -> None:
    roster = [f"h{i}" for i in range(20)]
    sid = bytes.fromhex(SID)
    graphs = [sparse_neighbours(roster, sid, attempt) for attempt in (0, 1, 2)]
    assert graphs[0] != graphs[1] and graphs[1] != graphs[2]
    assert graphs[1] == sparse_neighbours(roster, sid, 1)  # every party draws it alike


def test_the_binding_is_the_session_id_first_then_bound_to_attempt_and_roster() -> None:
    assert attempt_binding(SID, 0, ROSTER) == bytes.fromhex(SID)
    later = attempt_binding(SID, 1, ROSTER[:3])
    assert later != bytes.fromhex(SID)
    assert later != attempt_binding(SID, 2, ROSTER[:3])
    assert later != attempt_binding(SID, 1, ROSTER[1:])


def test_a_shuffle_ciphertext_of_the_last_attempt_is_refused_in_the_next() -> None:
    """The leader replays owner h3's sealed block of attempt 0 to h2 in attempt 1 (the same
    union keys, the same round number): the hand-off does not authenticate."""
    keys = [X25519PrivateKey.generate() for _ in range(3)]
    publics = tuple(k.public_key().public_bytes_raw() for k in keys)

    def party(index: int, attempt: int) -> ShuffleParty:
        binding = attempt_binding(SID, attempt, ROSTER[:3])
        ctx = ShuffleContext(binding, 5, publics, 64, (1, 1, 1))
        return ShuffleParty(PairKeys(keys[index], publics, binding), ctx)

    old = party(2, 0).owner_message([b"c"])
    first, second = party(0, 1), party(1, 1)
    first.owner_message([b"a"])
    second.owner_message([b"b"])
    first.step(0, [])
    with pytest.raises(IntegrityError):
        second.step(0, old)
    fresh = [party(i, 1) for i in range(3)]
    current = fresh[2].owner_message([b"c"])
    fresh[0].owner_message([b"a"])
    fresh[1].owner_message([b"b"])
    fresh[0].step(0, [])
    assert fresh[1].step(0, current) == []  # the same attempt's is taken


@pytest.mark.parametrize(
    ("attempt", "ring", "me", "reason"),
    [
        (0, ["h1", "h2", "h4"], "h1", "stale"),
        (2, ["h1", "h2", "h4"], "h1", "skips attempts"),
        (1, ["h1", "h2", "h9"], "h1", "h9, who is not in the session"),
        (1, ["h2", "h1", "h4"], "h1", "not in the session's order"),
        (1, ["h1", "h2", "h4"], "h3", "leaves this party out"),
        (1, ["h1", "h2"], "h1", "at least 3 parties"),
        (1, ROSTER, "h1", "leaves no party out"),
        (1, ["h1", "h1", "h2"], "h1", "names a party twice"),
    ],
)
def test_a_party_moves_only_to_the_next_attempt_among_a_subsequence_of_its_roster(
    attempt: int, ring: list[str], me: str, reason: str
) -> None:
    refusal = rerun_refusal(ROSTER, 0, attempt, ring, me)
    assert refusal is not None and reason in refusal
    assert rerun_refusal(ROSTER, 0, 1, ["h1", "h2", "h4"], "h1") is None
