"""The engine resumes from a prefix of an earlier run's history (issue #28, item 2): from the
run's own prefix it makes the uninterrupted run's choices; on other data the longest prefix
whose cut is valid there is chosen (fedanon/algorithms/tds/prefix.py).

Validity and "longest" are judged by the independent checker (fedanon.models.lkc) on the data's
own records generalized at the prefix cuts, not by the code under test.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.layout import Specialization, StatsLayout
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.algorithms.tds.prefix import Prefix, choose_prefix, replayed
from fedanon.models.lkc import check_lkc
from fedanon.schema import LKCParams, Schema
from fedanon.taxonomy.files import SensitiveValue
from fedanon.taxonomy.tree import Spec, Taxonomy

from .strategies import lkc_case

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _sensitive(schema: Schema) -> dict[str, list[str]]:
    out = defaultdict(list)
    for s in schema.sensitive:
        out[s.column].append(s.value)
    return dict(out)


def _recorded_run(schema, table, params, score, suppress=Fraction(0)):
    """An uninterrupted run: its release, result and its whole history as a prefix (the steps
    it sent to its party, with what its budget dropped)."""
    party = LocalParty(schema, table)
    steps: list[Specialization] = []
    specialize = party.specialize

    def record(step: Specialization) -> np.ndarray:
        steps.append(step)
        return specialize(step)

    party.specialize = record
    engine = LKCEngine(schema, params, score=score, suppress=suppress)
    result = engine.run(party)
    return party.generalized_table(), result, Prefix(steps, result.specializations, engine.dropped)


def _resumed_run(schema, table, params, score, prefix, suppress=Fraction(0)):
    party = LocalParty(schema, table)
    result = LKCEngine(schema, params, score=score, suppress=suppress).run(party, prefix)
    return party.generalized_table(), result


@SETTINGS
@given(
    case=lkc_case(),
    score=st.sampled_from(["infogain", "discernibility"]),
    where=st.floats(0, 1),
)
def test_resuming_from_the_runs_own_prefix_makes_the_same_choices(case, score, where):
    """From the state at any cut c_j of a run's own history, the rest of the run chooses as
    the uninterrupted run did: same history, cut, groups and release."""
    schema, table, L, K, C = case
    params = LKCParams.of(L, K, C)
    release, result, run = _recorded_run(schema, table, params, score)
    prefix = run.first(int(where * len(run.steps)))
    again, resumed = _resumed_run(schema, table, params, score, prefix)
    assert resumed.specializations == result.specializations
    assert resumed.cut == result.cut
    assert resumed.partitions == result.partitions
    assert resumed.extremes == result.extremes
    assert resumed.records == result.records
    pd.testing.assert_frame_equal(again, release)


@SETTINGS
@given(case=lkc_case(), where=st.floats(0, 1))
def test_resuming_under_a_suppression_budget_makes_the_same_choices(case, where):
    schema, table, _, K, C = case
    L, suppress = len(schema.taxonomies), Fraction(1, 10)
    params = LKCParams.of(L, K, C)
    release, result, run = _recorded_run(schema, table, params, "discernibility", suppress)
    prefix = run.first(int(where * len(run.steps)))
    again, resumed = _resumed_run(schema, table, params, "discernibility", prefix, suppress)
    assert resumed.specializations == result.specializations
    assert resumed.suppressed == result.suppressed
    assert resumed.suppressed_partitions.tolist() == result.suppressed_partitions.tolist()
    pd.testing.assert_frame_equal(again, release)


def _valid_at(schema, table, steps, L, K, C) -> bool:
    """The independent checker's verdict on `table` generalized at the cut `steps` reach
    (with `table`'s own masks: its records fall in the children it holds)."""
    party = LocalParty(schema, table)
    replayed(party, schema, steps)
    return check_lkc(party.generalized_table(), schema.qids, _sensitive(schema), L, K, C).ok


def _survivors_prefix(schema, table, keep, L, K, C, score="infogain"):
    """A run on `table`, then the prefix chosen for the rows `keep` (the survivors)."""
    params = LKCParams.of(L, K, C)
    _, _, run = _recorded_run(schema, table, params, score)
    survivors = table[keep].reset_index(drop=True)
    _, live = replayed(LocalParty(schema, survivors), schema, run.steps)
    chosen = choose_prefix(schema, params, Fraction(0), run, live[:, 0, :])
    return survivors, run.steps, chosen


def _survivor_masks(schema, survivors, steps):
    """The nonempty masks the survivors' own records give each of `steps`, found without
    prefix.py: each step is tried with every child marked, and the children that received
    records are the ones the survivors fill."""
    layout = StatsLayout.for_schema(schema)
    out: list[Specialization] = []
    for step in steps:
        trial = LocalParty(schema, survivors)
        replayed(trial, schema, out)
        link = trial.partitions.link(step.attr, step.node).size
        width = len(schema.taxonomies[step.attr].children[step.node])
        every = Specialization(step.attr, step.node, np.ones((link, width), dtype=bool))
        block = layout.unflatten(trial.specialize(every), link * width)
        filled = block[:, 0, 0].reshape(link, width) > 0
        out.append(Specialization(step.attr, step.node, filled, step.splits))
    return out


@SETTINGS
@given(case=lkc_case(max_rows=80), seed=st.integers(0, 2**32 - 1))
def test_the_chosen_prefix_is_the_longest_valid_one_for_the_survivors(case, seed):
    """The survivors (a random part of the rows) get the longest prefix of the run's history
    whose cut the checker passes on their records; the steps carry their own masks; and the
    run resumed from it releases a table the checker passes."""
    schema, table, L, K, C = case
    keep = np.random.default_rng(seed).random(len(table)) < 0.7
    params = LKCParams.of(L, K, C)
    survivors = table[keep].reset_index(drop=True)
    share = (survivors["sens"] == "s").mean() if len(survivors) else 1.0
    if len(survivors) < K or share > float(params.C):
        return  # infeasible for the survivors from the root: the engine refuses, as today
    survivors, steps, chosen = _survivors_prefix(schema, table, keep, L, K, C)
    m = len(chosen.steps)
    assert [(s.attr, s.node) for s in chosen.steps] == [(s.attr, s.node) for s in steps[:m]]
    for mine, theirs in zip(
        chosen.steps, _survivor_masks(schema, survivors, steps[:m]), strict=True
    ):
        assert np.array_equal(mine.nonempty, theirs.nonempty)
    assert _valid_at(schema, survivors, chosen.steps, L, K, C)
    if m < len(steps):
        longer = _survivor_masks(schema, survivors, steps[: m + 1])
        assert not _valid_at(schema, survivors, longer, L, K, C)
    release, _ = _resumed_run(schema, survivors, params, "infogain", chosen)
    assert check_lkc(release, schema.qids, _sensitive(schema), L, K, C).ok


def test_a_last_cut_invalid_for_the_survivors_rolls_back_to_a_shorter_prefix():
    """Constructed: K = 2 over one QID {a: a1 a2, b: b1 b2}. All parties: a1 a1 a2 a2 b1 b1
    b2 b2 (both levels specialized, 2 steps after the root... 3 in all). The survivors lose
    one a1 and one b1: a1 and b1 fall below K, so the cut after specializing a and b is
    invalid; after the first step (root -> a, b) it is valid: the prefix has one step."""
    spec = Spec("any", [Spec("a", [Spec("a1"), Spec("a2")]), Spec("b", [Spec("b1"), Spec("b2")])])
    schema = Schema(
        [Taxonomy.categorical("q", spec)], [SensitiveValue("sens", "s")], "cls", ["n", "y"]
    )
    values = ["a1", "a1", "a2", "a2", "b1", "b1", "b2", "b2"]
    table = pd.DataFrame(
        {"q": values, "cls": ["n", "y"] * 4, "sens": ["t"] * 8},
    )
    keep = np.array([True, False, True, True, True, False, True, True])
    survivors, steps, chosen = _survivors_prefix(schema, table, keep, 1, 2, "1")
    assert len(steps) == 3  # root, then a and b
    assert len(chosen.steps) == 1
    assert chosen.history[0]["value"] == "any"
    release, result = _resumed_run(schema, survivors, LKCParams.of(1, 2, "1"), "infogain", chosen)
    assert sorted(release["q"]) == ["a", "a", "a", "b", "b", "b"]
    assert len(result.specializations) == 1
