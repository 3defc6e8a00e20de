"""What a shard of a Dask party keeps: less than a one-process party, for the same release.

A shard's frame is its own, so it keeps only the columns the release copies (a QID is its atom
codes once encoded), and its partitions' statistics as their nonzero entries. The statistics
of partitions no longer live are freed, in either party.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.engines.shard_stats import SparseBlock
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.readers.sources import FrameShard
from fedanon.schema import LKCParams
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy


def _parties(rows: int = 4000) -> tuple[LocalParty, LocalParty]:
    table = generate_hospital(rows, seed=5).drop(columns=["patient_id"])
    taxonomy = load_taxonomy(hospital_taxonomy_path(), data_columns=list(table.columns))
    schema = build_schema(taxonomy, table, dynamic=["length_of_stay"])
    whole, shard = copy.deepcopy(schema), copy.deepcopy(schema)
    columns = list(table.columns)
    parties = LocalParty(whole, table), LocalParty.from_shard(shard, FrameShard(table), columns)
    for party in parties:
        LKCEngine(party.schema, LKCParams.of(2, 10, "0.5")).run(party)
    return parties


def test_a_shard_keeps_less_and_releases_the_same() -> None:
    whole, shard = _parties()
    assert shard.partitions.size == whole.partitions.size > 100
    qids = {t.attribute for t in shard.schema.taxonomies}
    assert not qids & set(shard.table.columns) and qids <= set(whole.table.columns)
    dense = sum(b.nbytes for b in whole._blocks)
    sparse = sum(b.nbytes for b in shard._blocks)
    assert all(isinstance(b, SparseBlock) or b.size == 0 for b in shard._blocks)
    assert 0 < sparse < dense / 4
    assert whole.generalized_table().equals(shard.generalized_table())
    assert list(shard.generalized_table().columns) == list(whole.table.columns)


def test_statistics_of_dead_partitions_are_freed() -> None:
    """Once none of a step's partitions is live, its block goes (not an empty view that keeps
    the whole block's memory alive)."""
    whole, _ = _parties()
    dead = [b for b, live in zip(whole._blocks, whole._block_live, strict=True) if live == 0]
    assert dead
    assert all(isinstance(b, np.ndarray) and b.size == 0 and b.base is None for b in dead)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_sparse_block_restores_any_ascending_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    stats = rng.integers(0, 300, size=(50, 7, 3)) * (rng.random((50, 7, 3)) < 0.1)
    stats[[3, 17]] = 0  # partitions with no entry at all
    block = SparseBlock.of(stats)
    assert block.nbytes < stats.nbytes / 3
    for rows in (np.arange(50), np.array([3]), np.array([0, 3, 17, 49]), np.array([], int)):
        out = np.full((rows.size, 7, 3), -1, dtype=np.int64)
        block.take(rows, out)
        np.testing.assert_array_equal(out, stats[rows])
