"""The engine's shortcuts agree with the general computations they replace.

Each shortcut is an exact rewrite of a slower path that is still there (or is written out
here from its definition), so the two must make the same choices on random tables; a
difference in any of them changes a release.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.local_party import LocalParty, _largest_of_runs
from fedanon.algorithms.tds.suppression import suppression_measures, violating
from fedanon.schema import LKCParams
from fedanon.text import lookup_codes

from .strategies import lkc_case


def _steps(case, whole_qid_shortcut: bool):
    schema, table, _, K, C = case
    L = len(schema.taxonomies)  # the whole QID is the one subset
    steps: list[tuple[str, str]] = []
    engine = LKCEngine(
        schema, LKCParams.of(L, K, C), on_step=lambda s: steps.append((s.attribute, s.value))
    )
    assert engine.validator.whole_qid
    engine.validator.whole_qid = whole_qid_shortcut
    result = engine.run(LocalParty(schema, table))
    return steps, result.extremes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=lkc_case())
def test_whole_qid_invalidation_matches_the_grouping_path(case):
    fast_steps, fast = _steps(case, True)
    grouped_steps, grouped = _steps(case, False)
    assert fast_steps == grouped_steps
    assert fast.min_size == grouped.min_size
    assert fast.max_confidence == grouped.max_confidence


def test_suppression_measures_match_their_definition_per_attribute():
    rng = np.random.default_rng(7)
    widths = [2, 0, 3, 1]
    starts = np.cumsum([1, *widths[:-1]])
    ends = starts + np.array(widths)
    slots = 1 + sum(widths)
    # channels: records, one class, two sensitive values (counts within the records)
    size = rng.integers(0, 12, (40, slots))
    sens = rng.integers(0, 12, (40, slots, 2)) % (size[..., None] + 1)
    stats = np.concatenate([size[..., None], np.zeros_like(size)[..., None], sens], axis=2)
    K, C = 5, Fraction(1, 2)
    reduction, delta = suppression_measures(stats, starts, ends, K, C, 2, 2)
    own = stats[:, 0, :]
    own_bad = violating(own, K, C, 2, 2)
    for j, (lo, hi) in enumerate(zip(starts, ends, strict=True)):
        children = stats[:, lo:hi, :]
        child_bad = violating(children, K, C, 2, 2)
        child_size = children[..., 0]
        after = np.where(child_bad, child_size, 0).sum(axis=1)
        before = np.where(own_bad, own[:, 0], 0)
        assert np.array_equal(delta[:, j], after - before)
        kept_children = np.where(child_bad, 0, child_size * child_size).sum(axis=1)
        kept_own = np.where(own_bad, 0, own[:, 0] * own[:, 0])
        assert np.array_equal(reduction[:, j], kept_own - kept_children)


def test_largest_of_runs_takes_the_first_of_equal_largest():
    sizes = np.array([3, 7, 7, 1, 5, 2, 5, 9], dtype=np.int64)
    lengths = np.array([3, 1, 3, 1])
    starts = np.cumsum(lengths) - lengths
    assert _largest_of_runs(sizes, starts, lengths).tolist() == [1, 3, 4, 7]


@pytest.mark.parametrize("values", [["b", "a", "zz", "a", "c"], ["a", "b", "a"], []])
def test_lookup_codes_by_arrow_matches_the_python_lookup(values):
    lookup = {"a": 4, "b": 0, "c": 2}
    arrow = pd.Series(values, dtype=pd.ArrowDtype(pa.string()))
    python = pd.Series(values, dtype=object)
    codes, first_absent = lookup_codes(arrow, lookup)
    expected = [lookup.get(v, -1) for v in values]
    assert codes.tolist() == expected
    assert first_absent == (expected.index(-1) if -1 in expected else None)
    python_codes, python_absent = lookup_codes(python, lookup)
    assert python_codes.tolist() == codes.tolist() and python_absent == first_absent


@pytest.mark.parametrize("kind", ["pandas-arrow", "arrow"])
def test_a_missing_cell_is_absent_not_the_last_distinct_value(kind):
    """Arrow text with a null: the null is absent (-1, reported as the first absent row), not
    coded as whichever value happened to be distinct last."""
    values = ["a", None, "c"]
    column = (
        pd.Series(values, dtype=pd.ArrowDtype(pa.string()))
        if kind == "pandas-arrow"
        else pa.chunked_array([pa.array(values, pa.string())])
    )
    codes, first_absent = lookup_codes(column, {"a": 4, "c": 2})
    assert codes.tolist() == [4, -1, 2]
    assert first_absent == 1


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=lkc_case())
def test_a_restarted_party_starts_from_the_first_runs_counts_without_counting(case):
    """best-of's later runs (`LocalParty.restarted`) start from the counts of the initial
    partition that the first run made: the same vector as a fresh party's, and no record
    counted again (with fixed trees every run starts from the same cut)."""
    import copy

    schema, table, _L, _K, _C = case
    fresh = LocalParty(copy.deepcopy(schema), table).start().copy()
    used = LocalParty(schema, table)
    first = used.start().copy()
    restarted = used.restarted(copy.deepcopy(schema))

    def counted(*_args: object) -> None:
        raise AssertionError("the restarted party counted the records again")

    restarted._count_blocks = counted
    again = restarted.start()
    assert np.array_equal(again, fresh) and np.array_equal(first, fresh)


def test_a_restarted_party_with_a_dynamic_tree_counts_again():
    """A dynamic tree's first split is decided per run: such a party's start counts anew."""
    from fedanon.schema import Schema
    from fedanon.taxonomy.tree import Taxonomy

    table = pd.DataFrame({"age": ["1", "5", "7", "9", "3", "2"], "c": list("yynnyn")})
    numbers = table["age"].astype(float).to_numpy()
    schema = Schema([Taxonomy.dynamic("age", numbers)], [], "c", ["n", "y"])
    party = LocalParty(schema, table)
    party.start()
    calls: list[int] = []
    restarted = party.restarted(schema)
    original = restarted._count_blocks
    restarted._count_blocks = lambda *a: calls.append(1) or original(*a)
    restarted.start()
    assert calls
