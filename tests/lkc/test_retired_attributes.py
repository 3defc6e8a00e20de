"""The in-process party stops counting attributes the engine can no longer choose, and finds a
step's records without a pass over every record; neither changes a release.

An attribute with no valid candidate left is never specialized again (an invalid candidate is
dropped for good), so the engine drops its candidates and the party leaves its children blocks
zero (`LocalParty.retire`). A step's records are the records under the specialized node, one
slice of the records ordered by atom (`LocalParty._records_under`).
"""

from __future__ import annotations

import copy
from fractions import Fraction
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fedanon.algorithms.tds import local_party
from fedanon.algorithms.tds.api import anonymize_lkc, build_schema, resolve_params
from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.layout import Specialization
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.experiments import arx_adult
from fedanon.readers.table_io import read_arrow
from fedanon.schema import LKCParams

from .strategies import lkc_case


class _CountingEveryBlock(LocalParty):
    """A party that offers no ``retire`` (as a federation's source): every block counted."""

    retire = None  # type: ignore[assignment]


@pytest.mark.skipif(not arx_adult.available(), reason="needs shared Adult data")
def _recording(party: LocalParty) -> list[np.ndarray]:
    """The statistics vector of every step `party` specializes from now on (copies)."""
    vectors: list[np.ndarray] = []
    specialize = party.specialize

    def record(step: Specialization) -> np.ndarray:
        vector = specialize(step)
        vectors.append(vector.copy())
        return vector

    party.specialize = record  # type: ignore[method-assign]
    return vectors


def test_the_arx_job_at_k10_retires_every_attribute_but_age_and_releases_the_same(monkeypatch):
    """ARX's Adult job at k = 10 without a budget: after the second step only age has a valid
    candidate, so the other seven attributes are retired, every later vector has zeros in
    their blocks, and the release is the one a party counting every block gives."""
    table = read_arrow(arx_adult.folder() / "arx_adult.csv")  # what the CLI reads
    taxonomy = arx_adult.load_hierarchies(table)
    params = resolve_params("k-anonymity", len(arx_adult.QIDS), None, 10, None)
    retired: list[list[int]] = []
    vectors: list[tuple[LocalParty, np.ndarray]] = []
    original_retire, original_specialize = LocalParty.retire, LocalParty.specialize

    def spy_retire(party: LocalParty, attrs):
        retired.append(list(attrs))
        original_retire(party, attrs)

    def spy_specialize(party: LocalParty, step: Specialization) -> np.ndarray:
        vector = original_specialize(party, step)
        vectors.append((party, vector.copy()))
        return vector

    monkeypatch.setattr(LocalParty, "retire", spy_retire)
    monkeypatch.setattr(LocalParty, "specialize", spy_specialize)
    schema = build_schema(taxonomy, table, arx_adult.QIDS, [], None)
    release = anonymize_lkc(table, schema, params, "discernibility")
    age = arx_adult.QIDS.index("age")
    assert sorted(a for attrs in retired for a in attrs) == [
        a for a in range(len(arx_adult.QIDS)) if a != age
    ]
    party = vectors[-1][0]
    layout = party.layout
    late = [v for _, v in vectors[2:]]
    assert late, "the job runs more than two steps"
    age_counted = False
    for vector in late:
        stats = vector.view(np.int64).reshape(-1, layout.slots, layout.channels)
        for a in range(len(arx_adult.QIDS)):
            block = stats[:, layout.offsets[a] : layout.offsets[a] + layout.widths[a], :]
            if a == age:  # its children are counted (zero once they are leaves)
                age_counted |= bool(block.any())
            else:
                assert not block.any()
    assert age_counted

    monkeypatch.setattr(LocalParty, "retire", original_retire)
    monkeypatch.setattr(LocalParty, "specialize", original_specialize)
    whole = build_schema(taxonomy, table, arx_adult.QIDS, [], None)
    engine = LKCEngine(whole, params, score="discernibility")
    counting_all = _CountingEveryBlock(whole, table)
    result = engine.run(counting_all)
    assert result.specializations == release.result.specializations
    assert result.cut == release.result.cut
    assert counting_all.generalized_table().equals(release.table)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=lkc_case())
def test_retiring_changes_no_choice_and_no_live_count(case):
    """On any job (L below or at |QID|, with and without a budget) a party that retires
    attributes makes the engine choose what a party counting every block makes it choose,
    and every block it still counts holds the same counts."""
    schema, table, L, K, C = case
    for share in (Fraction(0), Fraction(1, 10)):
        if share and len(schema.taxonomies) > L:
            continue  # a budget needs L >= |QID|
        runs = []
        for cls in (LocalParty, _CountingEveryBlock):
            trial = copy.deepcopy(schema)
            party = cls(trial, table)
            vectors = _recording(party)
            engine = LKCEngine(trial, LKCParams.of(L, K, C), score="discernibility", suppress=share)
            try:
                result = engine.run(party)
            except Exception as exc:  # infeasible starts are covered elsewhere
                assert "infeasible" in str(exc)
                break
            runs.append((result, vectors, party))
        if len(runs) < 2:
            continue
        (retiring, kept_vectors, party), (whole, all_vectors, _) = runs
        assert retiring.specializations == whole.specializations
        assert retiring.cut == whole.cut
        assert retiring.discernibility_ratio == whole.discernibility_ratio
        assert retiring.suppressed == whole.suppressed
        layout = party.layout
        retired = party._retired_slots
        for kept, every in zip(kept_vectors, all_vectors, strict=True):
            a = kept.view(np.int64).reshape(-1, layout.slots, layout.channels)
            b = every.view(np.int64).reshape(-1, layout.slots, layout.channels)
            live = np.ones(layout.slots, dtype=bool) if retired is None else ~retired
            # Slots retired by the end were live earlier: compare what is live at the end.
            assert np.array_equal(a[:, live, :], b[:, live, :])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=lkc_case())
def test_a_steps_records_are_those_of_the_partitions_on_link_best(case):
    """The records a step moves, found as the records under the specialized node, are exactly
    the records whose partition is on Link_Best (what a pass over every record finds)."""
    schema, table, L, K, C = case
    party = LocalParty(schema, table)
    checked: list[int] = []
    specialize = party.specialize

    def check(step: Specialization) -> np.ndarray:
        keys = party.partitions.keys[: party.partitions.size]
        alive = party.partitions.alive[: party.partitions.size]
        link = np.flatnonzero(alive & (keys[:, step.attr] == step.node))
        expected = np.flatnonzero(np.isin(party.record_partition, link))
        found = party._records_under(step.attr, step.node)
        assert np.array_equal(np.sort(found), expected)
        checked.append(found.size)
        return specialize(step)

    party.specialize = check
    try:
        LKCEngine(schema, LKCParams.of(L, K, C), score="infogain").run(party)
    except Exception as exc:  # infeasible starts are covered elsewhere
        assert "infeasible" in str(exc)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=lkc_case())
def test_a_pass_over_every_record_and_the_slice_release_the_same(case):
    """A table above `_SLICED_RECORDS` finds a step's records by a pass over every record
    instead of the slice by atom: both ways give the same statistics and release."""
    schema, table, L, K, C = case
    runs = []
    for limit in (local_party._SLICED_RECORDS, 0):  # the slice, then the pass
        trial = copy.deepcopy(schema)
        with mock.patch.object(local_party, "_SLICED_RECORDS", limit):
            party = LocalParty(trial, table)
            vectors = _recording(party)
            try:
                result = LKCEngine(trial, LKCParams.of(L, K, C), score="infogain").run(party)
            except Exception as exc:  # infeasible starts are covered elsewhere
                assert "infeasible" in str(exc)
                return
            runs.append((result.specializations, vectors, party.generalized_table()))
    (steps_a, vectors_a, table_a), (steps_b, vectors_b, table_b) = runs
    assert steps_a == steps_b
    assert all(np.array_equal(a, b) for a, b in zip(vectors_a, vectors_b, strict=True))
    assert table_a.equals(table_b)
