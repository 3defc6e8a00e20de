"""Group statistics must not depend on how QID subsets are batched into chunks.

Production tables are grouped in chunks of ``_CHUNK_ELEMENTS`` (row, subset) pairs; small test
tables always fit in one chunk, so a running maximum kept from the last chunk only would pass
them. Here the chunk size is forced down to one subset per chunk.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fedanon.algorithms.tds import grouping
from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.algorithms.tds.validity import Validator
from fedanon.models.lkc import check_lkc
from fedanon.schema import LKCParams

from .strategies import lkc_case


def test_extremes_over_three_subsets_one_chunk_each(monkeypatch):
    # Three QIDs, L=2: subsets (0,1), (0,2), (1,2), grouped one per chunk, in that order.
    # Partitions (keys on QIDs a, b, c) with one record each; the first is the sensitive one.
    keys = np.array([[0, 0, 0], [1, 0, 0]], dtype=np.int64)
    own = np.array([[1, 1], [1, 0]], dtype=np.int64)  # channels: count, sensitive count
    monkeypatch.setattr(grouping, "_CHUNK_ELEMENTS", 1)
    extremes = Validator(3, LKCParams.of(2, 1, 1), 0, 1).group_extremes(keys, own)
    # By hand: on (a, b) and (a, c) the sensitive record is alone (confidence 1); only the last
    # subset (b, c) puts both records in one group (confidence 1/2).
    assert extremes.max_confidence == [1.0]
    assert extremes.min_size == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=lkc_case())
def test_engine_extremes_match_the_checker_with_one_subset_per_chunk(case):
    schema, table, L, K, C = case
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grouping, "_CHUNK_ELEMENTS", 1)
        party = LocalParty(schema, table)
        result = LKCEngine(schema, LKCParams.of(L, K, C), score="infogain").run(party)
    sensitive = defaultdict(list)
    for s in schema.sensitive:
        sensitive[s.column].append(s.value)
    check = check_lkc(party.generalized_table(), schema.qids, dict(sensitive), L, K, C)
    assert check.ok, check.worst
    assert result.extremes.min_size == check.min_group_size
    for s, conf in zip(schema.sensitive, result.extremes.max_confidence, strict=True):
        assert conf == pytest.approx(float(check.max_confidence[(s.column, s.value)]), abs=1e-12)
