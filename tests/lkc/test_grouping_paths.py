"""Both ways of numbering groups (direct key space, hash factorization) give the same run.

Small test tables always fit the direct path, so the hash path is forced here by setting the
direct path's key-space limit to zero; a bug in either path changes the choices or extremes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fedanon.algorithms.tds import grouping
from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.schema import LKCParams

from .strategies import lkc_case


def _run(case, bins_per_element: float):
    schema, table, L, K, C = case
    steps: list[tuple[str, str]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grouping, "_DIRECT_BINS_PER_ELEMENT", bins_per_element)
        engine = LKCEngine(
            schema,
            LKCParams.of(L, K, C),
            on_step=lambda s: steps.append((s.attribute, s.value)),
        )
        result = engine.run(LocalParty(schema, table))
    return steps, result.extremes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=lkc_case())
def test_direct_and_hashed_grouping_make_the_same_run(case):
    direct_steps, direct = _run(case, 1e12)
    hashed_steps, hashed = _run(case, 0)
    assert direct_steps == hashed_steps
    assert direct.min_size == hashed.min_size
    assert np.allclose(direct.max_confidence, hashed.max_confidence)


def test_direct_keys_separate_distinct_keys_and_subsets():
    # Two subsets over columns (0,) and (1,); rows 0 and 2 agree on column 0 only.
    columns = np.array([[0, 1, 0], [1, 1, 0]], dtype=np.int32)  # transposed ranks
    radix = np.array([2, 2], dtype=np.int64)
    cols = np.array([[0], [1]], dtype=np.int64)
    ids, n_groups = grouping._direct_keys(np.zeros(3, np.int64), 1, columns, radix, cols)
    assert n_groups == 4  # two values per subset, one key space each
    assert ids[0, 0] == ids[0, 2] != ids[0, 1]
    assert ids[1, 0] == ids[1, 1] != ids[1, 2]
    assert len({*ids[0].tolist()} & {*ids[1].tolist()}) == 0
    assert ids.min() >= 0 and ids.max() < n_groups


def test_direct_keys_fold_a_shared_leading_column_into_the_base():
    # Both subsets start with column 0 (a required attribute); keys must still tell rows apart
    # by it: rows 0 and 1 differ on column 0 only.
    columns = np.array([[0, 1, 0], [2, 2, 1], [0, 0, 1]], dtype=np.int32)
    radix = np.array([2, 3, 2], dtype=np.int64)
    cols = np.array([[0, 1], [0, 2]], dtype=np.int64)
    ids, n_groups = grouping._direct_keys(np.array([1, 1, 1]), 2, columns, radix, cols)
    assert n_groups == 2 * (2 * 3) + 2 * (2 * 2)
    assert ids[0, 0] != ids[0, 1] and ids[1, 0] != ids[1, 1]
    assert ids[1, 0] != ids[1, 2]  # column 0 equal, column 2 differs
    assert len({*ids[0].tolist()} & {*ids[1].tolist()}) == 0
