"""Candidate orders under a suppression budget, and the centralized best-of search.

The ARX numbers below were measured with ARX's optimal search and its discernibility model on
the ARX Adult extract (bench/bench_arx.py, 2 % record-suppression limit); they are the target of
issue #17 (DR at or below ARX's at every k with the same budget).
"""

from __future__ import annotations

from fractions import Fraction

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema, resolve_params
from fedanon.algorithms.tds.engine import ORDERS, LKCEngine
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.errors import FedanonError
from fedanon.experiments import arx_adult
from fedanon.models.lkc import check_lkc
from fedanon.schema import LKCParams

from .strategies import lkc_case

ARX_QIDS = arx_adult.QIDS
# k -> ARX's discernibility ratio at a 2 % suppression limit (suppressed rows form one group).
ARX_DR_2PCT = {5: 0.0027205, 10: 0.0045708, 20: 0.0076960, 50: 0.0215606, 100: 0.0371031}


def _run(schema, table, params, share, order):
    return LKCEngine(
        schema, params, score="discernibility", suppress=Fraction(share), order=order
    ).run(LocalParty(schema, table))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=lkc_case())
def test_best_of_keeps_the_lowest_ratio_and_passes_the_checker(case):
    schema, table, _L, K, C = case
    L = len(schema.taxonomies)
    params = LKCParams.of(L, K, C)
    try:
        ratios = [
            _run(schema, table, params, "0.1", order).discernibility_ratio for order in ORDERS
        ]
        release = anonymize_lkc(
            table, schema, params, "discernibility", suppress="0.1", search="best-of"
        )
    except FedanonError:
        return  # infeasible start: covered by the engine's own tests
    assert release.result.discernibility_ratio == min(ratios)
    roots = {t.attribute: t.labels[t.root] for t in schema.taxonomies}
    sensitive = {s.column: [s.value] for s in schema.sensitive}
    budget = int(Fraction(1, 10) * len(table))
    check = check_lkc(
        release.table, schema.qids, sensitive, L, K, C, suppressed=roots, max_suppressed=budget
    )
    assert check.ok, check.worst
    assert release.report["suppression"]["order"] in ORDERS


def test_best_of_needs_the_discernibility_score():
    table = pd.DataFrame({"a": ["x"]})
    with pytest.raises(FedanonError, match="best-of"):
        anonymize_lkc(table, None, LKCParams.of(1, 1, 1), "infogain", search="best-of")
    with pytest.raises(FedanonError, match="--search"):
        anonymize_lkc(table, None, LKCParams.of(1, 1, 1), "infogain", search="beam")


def test_unknown_order_is_refused():
    with pytest.raises(FedanonError, match="unknown order"):
        LKCEngine(None, LKCParams.of(1, 1, 1), score="discernibility", order="random")


@pytest.mark.skipif(not arx_adult.available(), reason="needs shared Adult data")
@pytest.mark.parametrize("k", sorted(ARX_DR_2PCT))
def test_arx_adult_default_search_at_or_below_arx_with_two_percent(k):
    """ARX's job (no class column, so the discernibility score) with a 2 % budget and no
    search named: the default meets ARX's DR at every k. The greedy per-record order alone is
    0.4 % above it at k = 10 (0.004589 vs 0.004571), so the default takes the better order
    (docs/lkc.md, "Record suppression")."""
    table = arx_adult.read_extract()
    taxonomy = arx_adult.load_hierarchies(table)
    params = resolve_params("k-anonymity", len(ARX_QIDS), None, k, None)
    schema = build_schema(taxonomy, table, ARX_QIDS, [], None)
    score = "infogain" if schema.class_column else "discernibility"  # the CLI's default
    release = anonymize_lkc(table, schema, params, score, suppress="0.02")
    assert release.result.suppressed <= int(0.02 * len(table))
    assert release.result.discernibility_ratio <= ARX_DR_2PCT[k]
    greedy_schema = build_schema(taxonomy, table, ARX_QIDS, [], None)
    greedy = anonymize_lkc(table, greedy_schema, params, score, suppress="0.02", search="greedy")
    assert release.result.discernibility_ratio <= greedy.result.discernibility_ratio


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=lkc_case())
def test_a_restarted_party_runs_as_a_freshly_built_one(case):
    """best-of's second run reuses the first run's encoding (`LocalParty.restarted`): after a
    whole run on the same party, it must release what a party built from scratch releases."""
    import copy

    schema, table, L, K, C = case
    params = LKCParams.of(L, K, C)
    used = LocalParty(schema, table)
    try:
        LKCEngine(schema, params, score="discernibility").run(used)
    except FedanonError:
        return  # infeasible start: covered by the engine's own tests
    runs = []
    for party_of in (lambda s: LocalParty(s, table), used.restarted):
        trial_schema = copy.deepcopy(schema)
        party = party_of(trial_schema)
        result = LKCEngine(trial_schema, params, score="discernibility", order="per-record").run(
            party
        )
        runs.append((party.generalized_table(result.suppressed_partitions, False), result))
    (fresh, fresh_result), (restarted, restarted_result) = runs
    pd.testing.assert_frame_equal(restarted, fresh)
    assert restarted_result.discernibility_ratio == fresh_result.discernibility_ratio


def _repeated_table(copies: int) -> tuple[pd.DataFrame, object]:
    """Two QIDs whose every leaf combination holds `copies` records."""
    from fedanon.schema import Schema
    from fedanon.taxonomy.tree import Spec, Taxonomy

    colour = Taxonomy.categorical(
        "colour", Spec("*", [Spec("warm", [Spec("red"), Spec("orange")]), Spec("blue")])
    )
    size = Taxonomy.categorical("size", Spec("*", [Spec("S"), Spec("L")]))
    rows = [(c, s) for c in ("red", "orange", "blue") for s in ("S", "L")] * copies
    return pd.DataFrame(rows, columns=["colour", "size"]), Schema([colour, size])


def _counted_runs(monkeypatch) -> list[str]:
    """The search orders `LKCEngine.run` is called with, in call order, from now on."""
    runs: list[str] = []
    real_run = LKCEngine.run

    def counted(engine, source):
        runs.append(engine.order)
        return real_run(engine, source)

    monkeypatch.setattr(LKCEngine, "run", counted)
    return runs


def test_best_of_stops_after_a_release_at_the_leaves_with_nothing_suppressed(monkeypatch):
    """The first order's release has every QID at its leaves and suppresses nothing: the
    finest groups, so no other order can have a lower ratio, and none is run (the 1M-row ARX
    job at k <= 20 is such a case)."""
    table, schema = _repeated_table(copies=5)
    runs = _counted_runs(monkeypatch)
    release = anonymize_lkc(table, schema, LKCParams.of(2, 5, 1), "discernibility", suppress="0.1")
    assert release.result.suppressed == 0
    assert release.result.discernibility_ratio == 6 * 5**2 / 30**2  # six groups of five
    assert runs == ["per-record"]


def test_best_of_still_tries_the_other_order_short_of_the_leaves(monkeypatch):
    """k above the leaf groups' size: the first release is coarser, so the other order runs."""
    table, schema = _repeated_table(copies=5)
    runs = _counted_runs(monkeypatch)
    anonymize_lkc(table, schema, LKCParams.of(2, 6, 1), "discernibility", suppress="0.1")
    assert runs == ["per-record", "free-first"]
