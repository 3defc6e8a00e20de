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


def test_direct_groups_number_each_distinct_key_once():
    # Two subsets over columns (0,) and (1,); rows 0 and 2 agree on column 0 only.
    ranks = np.array([[0, 1], [1, 1], [0, 0]], dtype=np.int64)
    radix = np.array([2, 2], dtype=np.int64)
    cols = np.array([[0], [1]], dtype=np.int64)
    inverse, n_groups = grouping._direct_groups(np.zeros(3, np.int64), 1, ranks, radix, cols)
    assert n_groups == 4
    assert inverse[0, 0] == inverse[2, 0] != inverse[1, 0]
    assert inverse[0, 1] == inverse[1, 1] != inverse[2, 1]
    assert len({*inverse[:, 0].tolist()} & {*inverse[:, 1].tolist()}) == 0
