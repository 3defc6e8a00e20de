"""Sparse pairwise masks (SecAgg+ style, ``sum_mode = "sparse"``): each party masks with
k = 2*ceil(log2 n) partners of a graph drawn from the session, the masks still cancel, and a
coalition of fewer than k parties never isolates an honest party (#28)."""

from __future__ import annotations

import itertools
import random
import secrets

import numpy as np
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.keyshare import PeerKey
from fedanon.crypto.pairwise import (
    PairwiseAggregator,
    PairwiseMasker,
    neighbour_count,
    sparse_neighbours,
)
from fedanon.crypto.wire import bytes_to_counts, unpack_frames

from .uniformity import looks_uniform


def _roster(n: int) -> list[str]:
    return [f"hospital-{i + 1}" for i in range(n)]


def _maskers(roster: list[str], session: bytes, sparse: bool) -> dict[str, PairwiseMasker]:
    keys = {name: X25519PrivateKey.generate() for name in roster}
    raw = serialization.Encoding.Raw, serialization.PublicFormat.Raw
    peers = [PeerKey(n, "party", k.public_key().public_bytes(*raw)) for n, k in keys.items()]
    return {n: PairwiseMasker(n, keys[n], peers, roster, session, sparse) for n in roster}


def _connected(nodes: set[str], graph: dict[str, frozenset[str]]) -> bool:
    start = next(iter(nodes))
    seen, todo = {start}, [start]
    while todo:
        for other in graph[todo.pop()] & nodes:
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen == nodes


@pytest.mark.parametrize(
    ("n", "k"), [(3, 2), (8, 6), (9, 8), (10, 8), (20, 10), (33, 12), (100, 14), (256, 16)]
)
def test_degree_is_logarithmic_and_the_graph_symmetric(n: int, k: int) -> None:
    """k = 2*ceil(log2 n), every other party where that is n - 1 or more; every party has
    exactly k partners, and i is j's partner exactly when j is i's."""
    assert neighbour_count(n) == k
    graph = sparse_neighbours(_roster(n), secrets.token_bytes(16))
    assert all(len(partners) == k for partners in graph.values())
    assert all(name not in partners for name, partners in graph.items())
    assert all(a in graph[b] for a, partners in graph.items() for b in partners)


def test_every_party_derives_the_same_graph_and_each_session_another() -> None:
    roster, session = _roster(40), secrets.token_bytes(16)
    assert sparse_neighbours(roster, session) == sparse_neighbours(list(roster), session)
    assert sparse_neighbours(roster, session) != sparse_neighbours(roster, secrets.token_bytes(16))


@pytest.mark.parametrize("n", [10, 20, 40])
def test_no_coalition_of_fewer_than_k_parties_splits_the_honest_ones(n: int) -> None:
    """The graph is k-vertex-connected: removing any k - 1 parties (every such coalition for
    n = 10, 2,000 random ones otherwise) leaves the others connected, so the coalition (with the
    leader) learns only the honest parties' sum. A coalition of k can isolate a party."""
    roster = _roster(n)
    graph = sparse_neighbours(roster, secrets.token_bytes(16))
    k = neighbour_count(n)
    everyone = set(roster)
    if n == 10:
        coalitions = [set(c) for c in itertools.combinations(roster, k - 1)]
    else:
        rng = random.Random(n)
        coalitions = [set(rng.sample(roster, k - 1)) for _ in range(2000)]
    assert all(_connected(everyone - c, graph) for c in coalitions)
    victim = roster[0]
    assert not _connected(everyone - set(graph[victim]), graph)


@pytest.mark.parametrize("n", [10, 20, 33])
def test_sparse_masks_cancel_and_each_party_masks_with_k_partners(n: int) -> None:
    roster, session = _roster(n), secrets.token_bytes(16)
    maskers = _maskers(roster, session, sparse=True)
    assert all(len(m._pairs) == neighbour_count(n) for m in maskers.values())
    rng = np.random.default_rng(n)
    vectors = [rng.integers(0, 2**63, 50, dtype=np.uint64) for _ in roster]
    for round_ in range(3):
        shares = {
            name: maskers[name].masked_share(round_, v)
            for name, v in zip(roster, vectors, strict=True)
        }
        total = PairwiseAggregator(roster, session).combine(round_, shares)
        assert np.array_equal(total, np.sum(vectors, axis=0, dtype=np.uint64))


def test_a_sparse_share_looks_uniform_to_the_leader() -> None:
    """One party's share of an all-zero vector, masked by its k partners, is uniform bytes."""
    roster, session = _roster(20), secrets.token_bytes(16)
    maskers = _maskers(roster, session, sparse=True)
    share = maskers[roster[0]].masked_share(0, np.zeros(60_000, dtype=np.uint64))
    assert looks_uniform(bytes_to_counts(unpack_frames(b"FPS1", share, 6)[5]))


def test_a_sparse_and_a_complete_masker_do_not_combine() -> None:
    """A party masking with every other party among parties masking sparsely breaks the sum
    (the leader cannot get a total from mismatched graphs, only garbage)."""
    roster, session = _roster(20), secrets.token_bytes(16)
    sparse = _maskers(roster, session, sparse=True)
    vectors = [np.arange(8, dtype=np.uint64) for _ in roster]
    complete = _maskers(roster, session, sparse=False)
    shares = {n: sparse[n].masked_share(0, v) for n, v in zip(roster, vectors, strict=True)}
    assert np.array_equal(
        PairwiseAggregator(roster, session).combine(0, shares),
        np.sum(vectors, axis=0, dtype=np.uint64),
    )
    mixed = dict(shares)
    mixed[roster[0]] = complete[roster[0]].masked_share(0, vectors[0])
    total = PairwiseAggregator(roster, session).combine(0, mixed)
    assert not np.array_equal(total, np.sum(vectors, axis=0, dtype=np.uint64))
