"""Collusion-resistant secure sum with pairwise masks (each party reports to the leader).

Every pair of parties (i, j) shares an X25519 secret from their signed per-session keys
(`fedanon.crypto.keyshare`). For each round, HKDF turns it into a key bound to (session,
attempt, round, roster, pair), and AES-CTR expands that key into a mask vector m_ij that both
parties compute identically. Party i sends x_i + sum_{j>i} m_ij - sum_{j<i} m_ij to the leader
(indices in roster order); every m_ij is added once and subtracted once, so the masks cancel in
the leader's sum and only the sum of the x_i appears. A rerun without parties that dropped out
is a new attempt of the same session (docs/distributed.md, "Exclusion"): its masks come from the
same pair secrets under another attempt and roster, independent of the earlier attempt's, and a
share of one attempt never combines in another.

Unlike the ring, a party's share is hidden from any coalition that misses at least one other
party: the mask it shares with that party is unknown to the coalition and uniform. The price is
that the sum is only correct with every roster member present: the leader refuses to combine an
incomplete or inconsistent set of shares instead of returning a silently wrong total.

Sparse graph (``sparse=True``, as in SecAgg+): each party masks with k = 2*ceil(log2 n) others
instead of n - 1, so its cost per round grows with log n. The pairs are the edges of a circulant
graph (every party joined to the k/2 nearest on each side) over an order of the roster drawn from
the session id, attempt and roster, which every party computes alike; the masks still cancel, since
every edge adds its mask once and subtracts it once. The graph is k-vertex-connected (a Harary
graph), so a coalition of fewer than k parties, with or without the leader, still sees every honest
party joined to another honest one by a mask it lacks: it learns only the honest parties' sum, as
with the complete graph. A coalition of k or more may isolate an honest party (docs/leakage.md
states the assumption)."""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from numpy.typing import ArrayLike

from fedanon.crypto.errors import IdentityError, IntegrityError, MissingPartyError
from fedanon.crypto.keyshare import PeerKey
from fedanon.crypto.masks import MASK_KEY_BYTES, keyed_mask
from fedanon.crypto.wire import (
    as_counts,
    bytes_to_counts,
    counts_to_bytes,
    pack_frames,
    read_u64,
    u64,
    unpack_frames,
)

_HKDF_LABEL = b"fedanon/pairwise-mask/v1"
_ROSTER_TAG = b"FPR1"
_INFO_TAG = b"FPI1"
_SHARE_TAG = b"FPS1"
_GRAPH_TAG = b"FPG1"


def _check_roster(roster: Sequence[str], session_id: bytes) -> tuple[str, ...]:
    roster = tuple(roster)
    if len(roster) < 2:
        raise ValueError("a pairwise sum needs at least two parties")
    if len(set(roster)) != len(roster):
        raise ValueError("roster names must be distinct")
    if not session_id:
        raise ValueError("session id must be non-empty")
    return roster


def roster_digest(roster: Sequence[str]) -> bytes:
    """SHA-256 of the ordered roster: shares computed under different rosters never combine."""
    return hashlib.sha256(pack_frames(_ROSTER_TAG, [n.encode() for n in roster])).digest()


def neighbour_count(parties: int) -> int:
    """The sparse graph's degree k: 2*ceil(log2 n), or n - 1 (every other party) if no less."""
    k = 2 * math.ceil(math.log2(parties))
    return parties - 1 if k >= parties - 1 else k


def sparse_neighbours(
    roster: Sequence[str], session_id: bytes, attempt: int = 0
) -> dict[str, frozenset[str]]:
    """Every roster member's mask partners in the sparse graph of (`session_id`, `attempt`,
    `roster`).

    The roster is ordered by HMAC-SHA256 of each name under a seed hashed from the session id,
    the attempt and the roster digest; each party is joined to the k/2 parties before and after
    it in that order (cyclically), k = :func:`neighbour_count`. Symmetric, every degree k.
    """
    roster = _check_roster(roster, session_id)
    n, k = len(roster), neighbour_count(len(roster))
    if k == n - 1:
        return {name: frozenset(roster) - {name} for name in roster}
    fields = [session_id, u64(attempt), roster_digest(roster)]
    seed = hashlib.sha256(pack_frames(_GRAPH_TAG, fields)).digest()
    order = sorted(roster, key=lambda name: hmac.new(seed, name.encode(), "sha256").digest())
    at = {name: i for i, name in enumerate(order)}
    offsets = [d for d in range(-(k // 2), k // 2 + 1) if d]
    return {name: frozenset(order[(at[name] + d) % n] for d in offsets) for name in roster}


class PairwiseMasker:
    """One party's side: holds its pair secrets for the session and masks its vectors.

    `peers` are the verified key shares relayed by the leader (the party's own may be included);
    every other roster member must be present and have the party role.
    """

    def __init__(
        self,
        name: str,
        private_key: X25519PrivateKey,
        peers: Iterable[PeerKey],
        roster: Sequence[str],
        session_id: bytes,
        sparse: bool = False,
        attempt: int = 0,
    ) -> None:
        """`sparse`: mask with this party's neighbours in :func:`sparse_neighbours` only;
        `attempt`: the session's attempt (0: its first) the masks are bound to."""
        self.roster = _check_roster(roster, session_id)
        self.attempt = attempt
        if name not in self.roster:
            raise ValueError(f"{name!r} is not in the roster")
        self.name = name
        self.session_id = session_id
        self._digest = roster_digest(self.roster)
        keys: dict[str, bytes] = {}
        for peer in peers:
            if peer.name == name:
                continue
            if peer.name not in self.roster:
                raise IdentityError(f"key share from {peer.name!r}, who is not in the roster")
            if peer.role != "party":
                raise IdentityError(f"{peer.name!r} has role {peer.role!r}, not party")
            if peer.name in keys:
                raise IntegrityError(f"two key shares from {peer.name!r}")
            keys[peer.name] = peer.public_key
        missing = [n for n in self.roster if n != name and n not in keys]
        if missing:
            raise MissingPartyError(f"no key share from {', '.join(missing)}")
        me = self.roster.index(name)
        partners = sparse_neighbours(self.roster, session_id, attempt)[name] if sparse else None
        # Per partner: +1 if its roster index is higher (we add that mask), else -1, and the
        # X25519 secret we share with it.
        self._pairs: dict[str, tuple[int, bytes]] = {}
        for j, other in enumerate(self.roster):
            if j == me or (partners is not None and other not in partners):
                continue
            try:
                secret = private_key.exchange(X25519PublicKey.from_public_bytes(keys[other]))
            except ValueError:
                raise IntegrityError(f"key share of {other!r} is not a usable X25519 key") from None
            self._pairs[other] = (1 if j > me else -1, secret)
        self._used_rounds: set[int] = set()

    def pair_mask(self, round_: int, other: str, length: int) -> np.ndarray:
        """The mask this party and `other` both derive for `round_` (read-only).

        Key: HKDF-SHA256 of the pair's X25519 secret, salt = session id, info binding round,
        attempt, roster and the pair in roster order, so no two (session, attempt, round,
        pair) share a stream.
        """
        _, secret = self._pairs[other]
        low, high = sorted((self.name, other), key=self.roster.index)
        info = _HKDF_LABEL + pack_frames(
            _INFO_TAG,
            [u64(round_), u64(self.attempt), self._digest, low.encode(), high.encode()],
        )
        key = HKDF(hashes.SHA256(), MASK_KEY_BYTES, salt=self.session_id, info=info).derive(secret)
        return keyed_mask(key, length)

    def masked_share(self, round_: int, vector: ArrayLike) -> bytes:
        """This party's masked vector for `round_`, as the message to send to the leader.

        Each round may be masked once: the same masks over two different vectors would reveal
        their difference.
        """
        if round_ in self._used_rounds:
            raise RuntimeError(f"round {round_} was already masked; masks are never reused")
        counts = as_counts(vector)
        total = counts.copy()
        for other, (sign, _) in self._pairs.items():
            mask = self.pair_mask(round_, other, counts.size)
            if sign > 0:
                total += mask
            else:
                total -= mask
        self._used_rounds.add(round_)
        fields = [self.session_id, u64(self.attempt), u64(round_), self.name.encode(), self._digest]
        return pack_frames(_SHARE_TAG, [*fields, counts_to_bytes(total)])


class PairwiseAggregator:
    """The leader's side: checks that every roster member sent one consistent share, then sums."""

    def __init__(self, roster: Sequence[str], session_id: bytes, attempt: int = 0) -> None:
        self.roster = _check_roster(roster, session_id)
        self.session_id = session_id
        self.attempt = attempt
        self._digest = roster_digest(self.roster)

    def combine(self, round_: int, shares: Mapping[str, bytes]) -> np.ndarray:
        """Sum the shares of `round_`, keyed by the (TLS-authenticated) sender's name.

        Raises `MissingPartyError` naming every absent party and `IntegrityError` for a share of
        another session, attempt or round, under another roster, or claiming another sender.
        """
        vectors: list[np.ndarray] = []
        length: int | None = None
        for sender, share in shares.items():
            if sender not in self.roster:
                raise IntegrityError(f"share from {sender!r}, who is not in the roster")
            session, attempt, round_field, name, digest, payload = unpack_frames(
                _SHARE_TAG, share, 6
            )
            if session != self.session_id:
                raise IntegrityError(f"share from {sender!r} belongs to another session")
            if read_u64(attempt) != self.attempt:
                raise IntegrityError(
                    f"share from {sender!r} is of attempt {read_u64(attempt)}, not {self.attempt}"
                )
            if read_u64(round_field) != round_:
                raise IntegrityError(
                    f"share from {sender!r} is for round {read_u64(round_field)}, not {round_}"
                )
            if name != sender.encode():
                raise IntegrityError(f"share sent by {sender!r} claims to be from {name!r}")
            if digest != self._digest:
                raise IntegrityError(f"{sender!r} masked under a different roster")
            vector = bytes_to_counts(payload, length)
            length = vector.size
            vectors.append(vector)
        missing = [n for n in self.roster if n not in shares]
        if missing:
            raise MissingPartyError(
                f"round {round_}: no share from {', '.join(missing)}; the masks cannot cancel"
            )
        total = np.zeros(length or 0, dtype=np.uint64)
        for vector in vectors:
            total += vector
        return total
