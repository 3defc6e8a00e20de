"""The progress display's smallest group, kept per step only when someone watches progress.

The engine reports its final extremes from one pass over the final groups; the per-step
running minimum exists only for ``on_step``. Both must agree at the end: every group formed
during the run is a union of final groups.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from fedanon.algorithms.tds.engine import LKCEngine, StepInfo
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.schema import LKCParams

from .strategies import lkc_case


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=lkc_case())
def test_last_progress_minimum_is_the_reported_minimum(case):
    schema, table, L, K, C = case
    steps: list[StepInfo] = []
    engine = LKCEngine(schema, LKCParams.of(L, K, C), on_step=steps.append)
    try:
        result = engine.run(LocalParty(schema, table))
    except Exception as exc:  # infeasible start: no progress to compare
        assert "infeasible" in str(exc)
        return
    if not steps:
        assert result.extremes.min_size == len(table)
        return
    assert [s.min_group_size for s in steps] == sorted(
        (s.min_group_size for s in steps), reverse=True
    )
    assert steps[-1].min_group_size == result.extremes.min_size
