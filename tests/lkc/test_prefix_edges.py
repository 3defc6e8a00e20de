"""Edges of the longest valid prefix (fedanon/algorithms/tds/prefix.py, #28 session 11
review), constructed so the expected prefix is read off the records: a group only the dropped
party held (empty for the survivors) judges nothing, and violating records that exactly fill
a suppression budget still fit it."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.algorithms.tds.prefix import choose_prefix, replayed
from fedanon.schema import LKCParams, Schema
from fedanon.taxonomy.files import SensitiveValue
from fedanon.taxonomy.tree import Spec, Taxonomy

from .test_prefix_resume import _recorded_run, _survivors_prefix

# One QID {a: a1 a2, b: b1 b2}; two records of each leaf: a run at K = 2 specializes the root,
# then a and b (3 steps), every leaf a group of 2.
SPEC = Spec("any", [Spec("a", [Spec("a1"), Spec("a2")]), Spec("b", [Spec("b1"), Spec("b2")])])
SCHEMA = Schema([Taxonomy.categorical("q", SPEC)], [SensitiveValue("sens", "s")], "cls", ["n", "y"])
TABLE = pd.DataFrame(
    {
        "q": ["a1", "a1", "a2", "a2", "b1", "b1", "b2", "b2"],
        "cls": ["n", "y"] * 4,
        "sens": ["t"] * 8,
    }
)


def test_a_group_only_the_dropped_party_held_judges_nothing() -> None:
    """The survivors hold no a1: the last cut's groups that hold records (a2, b1, b2: 2
    each) pass K = 2, so the whole history is kept, and the step on a creates a2 alone."""
    keep = np.array([False, False, True, True, True, True, True, True])
    _survivors, steps, chosen = _survivors_prefix(SCHEMA, TABLE, keep, 1, 2, "1")
    assert len(steps) == 3 and len(chosen.steps) == 3
    on_a = next(s for s in chosen.steps if s.node == SCHEMA.taxonomies[0].children[0][0])
    assert on_a.nonempty.tolist() == [[False, True]]


def test_violating_records_that_exactly_fill_the_budget_fit_it() -> None:
    """The survivors lose one a1: a1 holds 1 record (below K = 2), 7 records in all; a budget
    of 1/7 allows floor(7/7) = 1 suppressed record, so the last cut is valid."""
    params = LKCParams.of(1, 2, "1")
    _, _, run = _recorded_run(SCHEMA, TABLE, params, "infogain")
    assert len(run.steps) == 3
    survivors = TABLE.drop(index=0).reset_index(drop=True)
    _, live = replayed(LocalParty(SCHEMA, survivors), SCHEMA, run.steps)
    chosen = choose_prefix(SCHEMA, params, Fraction(1, 7), run, live[:, 0, :])
    assert len(chosen.steps) == 3
    tighter = choose_prefix(SCHEMA, params, Fraction(1, 8), run, live[:, 0, :])
    assert len(tighter.steps) < 3  # floor(7/8) = 0: the a1 record no longer fits
