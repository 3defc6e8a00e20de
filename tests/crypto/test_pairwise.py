"""Pairwise-mask secure sum: correctness, aborts, key authentication, and coalition resistance."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from fedanon.crypto.errors import IdentityError, IntegrityError, MissingPartyError
from fedanon.crypto.keyshare import (
    ONION_UNION,
    PAIRWISE_SUM,
    PeerKey,
    create_key_share,
    verify_key_share,
)
from fedanon.crypto.pairwise import PairwiseAggregator, PairwiseMasker
from fedanon.crypto.simulate import pairwise_sum
from fedanon.crypto.wire import bytes_to_counts, pack_frames, unpack_frames

from .uniformity import looks_uniform
from .vectors import plain_sum, random_vectors, sum_cases


@sum_cases(max_examples=40)
def test_pairwise_sum_equals_plain_sum(federation, n, length, seed, full_range) -> None:
    vectors = random_vectors(n, length, seed, full_range)
    result = pairwise_sum(vectors, federation.parties[:n], federation.ca.certificate)
    assert np.array_equal(result, plain_sum(vectors))


class Session:
    """n parties that exchanged verified key shares, with their maskers and the leader."""

    def __init__(self, federation, n: int) -> None:
        self.session_id = secrets.token_bytes(16)
        self.identities = federation.parties[:n]
        self.roster = [identity.name for identity in self.identities]
        created = [create_key_share(i, self.session_id, PAIRWISE_SUM) for i in self.identities]
        self.announcements = [message for _, message in created]
        peers = [
            verify_key_share(m, federation.ca.certificate, self.session_id, PAIRWISE_SUM)
            for m in self.announcements
        ]
        self.maskers = {
            identity.name: PairwiseMasker(identity.name, key, peers, self.roster, self.session_id)
            for identity, (key, _) in zip(self.identities, created, strict=True)
        }
        self.leader = PairwiseAggregator(self.roster, self.session_id)

    def shares(self, round_: int, vectors: list[np.ndarray]) -> dict[str, bytes]:
        return {
            name: self.maskers[name].masked_share(round_, vector)
            for name, vector in zip(self.roster, vectors, strict=True)
        }


def share_vector(share: bytes) -> np.ndarray:
    """The masked vector inside a share message (what the leader sees)."""
    return bytes_to_counts(unpack_frames(b"FPS1", share, 6)[5])


def test_missing_party_aborts_naming_it(federation) -> None:
    session = Session(federation, 4)
    shares = session.shares(0, random_vectors(4, 10, seed=1, full_range=False))
    del shares["p02"]
    with pytest.raises(MissingPartyError, match="p02"):
        session.leader.combine(0, shares)


def test_stale_foreign_or_misattributed_shares_are_rejected(federation) -> None:
    session = Session(federation, 3)
    vectors = random_vectors(3, 10, seed=1, full_range=False)
    shares = session.shares(5, vectors)
    with pytest.raises(IntegrityError, match="round"):
        session.leader.combine(6, shares)
    swapped = {**shares, "p00": shares["p01"], "p01": shares["p00"]}
    with pytest.raises(IntegrityError, match="claims"):
        session.leader.combine(5, swapped)
    other = Session(federation, 3)
    with pytest.raises(IntegrityError, match="session"):
        other.leader.combine(5, shares)
    with pytest.raises(IntegrityError, match="roster"):
        PairwiseAggregator(["p00", "p01", "p02", "p03"], session.session_id).combine(5, shares)
    assert np.array_equal(session.leader.combine(5, shares), plain_sum(vectors))


def test_masks_are_never_reused(federation) -> None:
    session = Session(federation, 2)
    masker = session.maskers["p00"]
    masker.masked_share(0, [1, 2])
    with pytest.raises(RuntimeError):
        masker.masked_share(0, [1, 3])
    assert not np.array_equal(masker.pair_mask(0, "p01", 64), masker.pair_mask(1, "p01", 64))


def test_both_parties_of_a_pair_derive_the_same_mask(federation) -> None:
    session = Session(federation, 3)
    a, b = session.maskers["p00"], session.maskers["p02"]
    assert np.array_equal(a.pair_mask(3, "p02", 100), b.pair_mask(3, "p00", 100))
    assert not np.array_equal(a.pair_mask(3, "p02", 100), a.pair_mask(3, "p01", 100))


def test_leader_cannot_substitute_a_party_key(federation) -> None:
    """The relaying leader swaps p01's X25519 key for its own: the signature check fails."""
    session_id = secrets.token_bytes(16)
    _, genuine = create_key_share(federation.parties[1], session_id, PAIRWISE_SUM)
    _, leaders = create_key_share(federation.leader, session_id, PAIRWISE_SUM)
    fields = unpack_frames(b"FKM1", genuine, 6)
    fields[3] = unpack_frames(b"FKM1", leaders, 6)[3]
    forged = pack_frames(b"FKM1", fields)
    with pytest.raises(IdentityError, match="signature"):
        verify_key_share(forged, federation.ca.certificate, session_id, PAIRWISE_SUM)
    # Re-labelling the leader's own signed share as p01's is caught by the certificate name.
    relabelled = unpack_frames(b"FKM1", leaders, 6)
    relabelled[2] = b"p01"
    with pytest.raises(IdentityError):
        verify_key_share(
            pack_frames(b"FKM1", relabelled), federation.ca.certificate, session_id, PAIRWISE_SUM
        )


def test_key_shares_are_bound_to_session_purpose_ca_and_role(federation, other_federation):
    session_id = secrets.token_bytes(16)
    _, share = create_key_share(federation.parties[0], session_id, PAIRWISE_SUM)
    ca = federation.ca.certificate
    assert verify_key_share(share, ca, session_id, PAIRWISE_SUM).name == "p00"
    with pytest.raises(IntegrityError, match="session"):
        verify_key_share(share, ca, secrets.token_bytes(16), PAIRWISE_SUM)
    with pytest.raises(IntegrityError):
        verify_key_share(share, ca, session_id, ONION_UNION)
    with pytest.raises(IdentityError, match="expected"):
        verify_key_share(share, ca, session_id, PAIRWISE_SUM, expected_name="p01")
    _, foreign = create_key_share(other_federation.parties[0], session_id, PAIRWISE_SUM)
    with pytest.raises(IdentityError, match="CA"):
        verify_key_share(foreign, ca, session_id, PAIRWISE_SUM)
    _, leaders = create_key_share(federation.leader, session_id, PAIRWISE_SUM)
    with pytest.raises(IdentityError, match="role"):
        verify_key_share(leaders, ca, session_id, PAIRWISE_SUM, expected_role="party")


def test_masker_needs_every_peer_key_and_only_parties(federation) -> None:
    session = Session(federation, 3)
    key, _ = create_key_share(federation.parties[0], session.session_id, PAIRWISE_SUM)
    peer = PeerKey("p01", "party", bytes(32))
    with pytest.raises(MissingPartyError, match="p02"):
        PairwiseMasker("p00", key, [peer], session.roster, session.session_id)
    leader = PeerKey("p02", "leader", bytes(32))
    with pytest.raises(IdentityError, match="role"):
        PairwiseMasker("p00", key, [peer, leader], session.roster, session.session_id)


def coalition_estimate(
    session: Session, target: str, coalition: list[str], share: bytes, round_: int
) -> np.ndarray:
    """The coalition's best reconstruction of `target`'s vector from its share.

    Every coalition party knows the mask it shares with the target and removes it with the
    sign the target applied; masks with parties outside the coalition stay in.
    """
    estimate = share_vector(share).copy()
    order = session.roster.index(target)
    for member in coalition:
        mask = session.maskers[member].pair_mask(round_, target, estimate.size)
        if session.roster.index(member) > order:
            estimate -= mask
        else:
            estimate += mask
    return estimate


def test_coalition_of_all_others_recovers_the_vector(federation) -> None:
    """Leader plus all other parties: the attack works (the sum itself reveals it anyway)."""
    session = Session(federation, 5)
    vectors = random_vectors(5, 4096, seed=9, full_range=False)
    shares = session.shares(0, vectors)
    others = [name for name in session.roster if name != "p01"]
    estimate = coalition_estimate(session, "p01", others, shares["p01"], 0)
    assert np.array_equal(estimate, vectors[1])


def test_coalition_short_of_all_others_learns_nothing(federation) -> None:
    """Leader plus every party but the target and one more: the estimate is uniform noise."""
    session = Session(federation, 5)
    length = 1 << 17
    vectors = random_vectors(5, length, seed=9, full_range=False)
    shares = session.shares(0, vectors)
    coalition = ["p00", "p02", "p04"]  # p01 (target) and p03 are honest
    estimate = coalition_estimate(session, "p01", coalition, shares["p01"], 0)
    assert not np.array_equal(estimate, vectors[1])
    assert np.count_nonzero(estimate == vectors[1]) < 10
    assert looks_uniform(estimate)
    # The leader alone sees a uniform share, too.
    assert looks_uniform(share_vector(shares["p01"]))
    # ... while the total is exact.
    assert np.array_equal(session.leader.combine(0, shares), plain_sum(vectors))
