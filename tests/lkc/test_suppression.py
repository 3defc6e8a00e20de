"""Record suppression: the budget rule on a hand-worked table, and releases the checker accepts."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedanon.algorithms.tds.api import anonymize_lkc
from fedanon.algorithms.tds.suppression import parse_suppression_share
from fedanon.errors import FedanonError
from fedanon.models.lkc import check_lkc
from fedanon.schema import LKCParams, Schema
from fedanon.taxonomy.tree import Spec, Taxonomy

from .strategies import lkc_case


def _city_case() -> tuple[Schema, pd.DataFrame]:
    """ANY -> {L, R}, L -> {l1, l2}, R -> {r1, r2}; 4 x l1, 4 x l2, 3 x r1, 1 x r2."""
    tree = Spec("ANY", [Spec("L", [Spec("l1"), Spec("l2")]), Spec("R", [Spec("r1"), Spec("r2")])])
    tax = Taxonomy.categorical("city", tree)
    values = ["l1"] * 4 + ["l2"] * 4 + ["r1"] * 3 + ["r2"]
    table = pd.DataFrame({"city": values, "cls": ["y", "n"] * 6})
    return Schema([tax], [], "cls", ["n", "y"]), table


def test_without_budget_r_stays_generalized():
    schema, table = _city_case()
    release = anonymize_lkc(table, schema, LKCParams.of(1, 3, 1), "discernibility")
    assert sorted(release.table["city"].unique()) == ["R", "l1", "l2"]
    assert "suppression" not in release.report


def test_budget_of_one_record_suppresses_r2_at_the_root():
    # K=3: splitting R leaves r2 with 1 record; a budget of floor(1/12 * 12) = 1 allows it.
    schema, table = _city_case()
    release = anonymize_lkc(table, schema, LKCParams.of(1, 3, 1), "discernibility", suppress="1/12")
    assert list(release.table["city"]) == ["l1"] * 4 + ["l2"] * 4 + ["r1"] * 3 + ["ANY"]
    assert release.report["suppression"] == {
        "share": "1/12",
        "budget_records": 1,
        "suppressed_records": 1,
        "suppressed_groups": 1,
        "mode": "root",
        "order": "per-record",
    }
    groups = release.report["groups"]
    assert groups["min_group_size"] == 3
    assert groups["discernibility_ratio"] == pytest.approx((16 + 16 + 9 + 1) / 144)


def test_budget_below_one_record_changes_nothing():
    schema, table = _city_case()
    release = anonymize_lkc(
        table, schema, LKCParams.of(1, 3, 1), "discernibility", suppress=0.08
    )  # floor(0.96) = 0 records
    assert sorted(release.table["city"].unique()) == ["R", "l1", "l2"]
    assert release.report["suppression"]["suppressed_records"] == 0


def test_drop_mode_removes_the_suppressed_record():
    schema, table = _city_case()
    release = anonymize_lkc(
        table,
        schema,
        LKCParams.of(1, 3, 1),
        "discernibility",
        suppress="1/12",
        suppressed_mode="drop",
    )
    assert list(release.table["city"]) == ["l1"] * 4 + ["l2"] * 4 + ["r1"] * 3
    assert list(release.table.index) == list(range(11))


def test_checker_exempts_the_suppression_group_only_within_the_budget():
    schema, table = _city_case()
    release = anonymize_lkc(
        table, schema, LKCParams.of(1, 3, 1), "discernibility", suppress="1/12"
    ).table
    roots = {"city": "ANY"}
    assert not check_lkc(release, ["city"], {}, 1, 3, 1).ok
    ok = check_lkc(release, ["city"], {}, 1, 3, 1, suppressed=roots, max_suppressed=1)
    assert ok.ok and ok.suppressed_rows == 1 and ok.rows == 12
    over = check_lkc(release, ["city"], {}, 1, 3, 1, suppressed=roots, max_suppressed=0)
    assert not over.ok and over.worst.values == ("ANY",) and over.worst.first_row == 11


def test_checker_reports_rows_of_the_table_as_given():
    df = pd.DataFrame({"q": ["*", "a", "a", "b", "b", "b"]})
    result = check_lkc(df, ["q"], {}, 1, 3, 1, suppressed={"q": "*"}, max_suppressed=1)
    assert not result.ok and result.worst.values == ("a",) and result.worst.first_row == 1


def test_suppression_needs_l_at_least_the_number_of_qids():
    schema, table = _city_case()
    two = Schema(
        [*schema.taxonomies, Taxonomy.categorical("town", Spec("T", [Spec("t")]))],
        [],
        "cls",
        ["n", "y"],
    )
    table = table.assign(town="t")
    with pytest.raises(FedanonError, match="L >= the number of QIDs"):
        anonymize_lkc(table, two, LKCParams.of(1, 3, 1), "discernibility", suppress=0.1)


@pytest.mark.parametrize("text", ["-0.1", "1", "abc", "150%"])
def test_bad_budget_is_one_error(text):
    with pytest.raises(FedanonError, match="--suppress"):
        parse_suppression_share(text)


def test_budget_forms_are_exact():
    assert parse_suppression_share("2%") == Fraction(1, 50) == parse_suppression_share(0.02)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=lkc_case(),
    share=st.sampled_from(["0.05", "0.1", "0.25"]),
    score=st.sampled_from(["infogain", "discernibility"]),
)
def test_release_within_budget_passes_checker(case, share, score):
    schema, table, _L, K, C = case
    L = len(schema.taxonomies)
    try:
        release = anonymize_lkc(table, schema, LKCParams.of(L, K, C), score, suppress=share)
    except FedanonError:
        return  # infeasible start: covered by the engine's own tests
    budget = int(Fraction(share) * len(table))
    roots = {t.attribute: t.labels[t.root] for t in schema.taxonomies}
    at_root = np.ones(len(table), dtype=bool)
    for q, label in roots.items():
        at_root &= release.table[q].astype(str).to_numpy() == label
    suppressed = release.result.suppressed
    assert suppressed <= budget
    if suppressed:
        assert at_root.sum() == suppressed
    check = check_lkc(
        release.table,
        schema.qids,
        {"sens": ["s"]},
        L,
        K,
        C,
        suppressed=roots,
        max_suppressed=budget,
    )
    assert check.ok, check.worst
    assert release.result.extremes.min_size == check.min_group_size


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=lkc_case())
def test_budget_first_performs_what_suppresses_nothing(case):
    """InfoGain under a budget (order free-first) first makes the budget-free run's choices."""
    score = "infogain"
    schema, table, _L, K, C = case
    params = LKCParams.of(len(schema.taxonomies), K, C)
    try:
        plain = anonymize_lkc(table, schema, params, score)
    except FedanonError:
        return
    budgeted = anonymize_lkc(table, schema, params, score, suppress="0.2")
    before = [(s["attribute"], s["value"]) for s in plain.report["specialization_sequence"]]
    after = [(s["attribute"], s["value"]) for s in budgeted.report["specialization_sequence"]]
    assert after[: len(before)] == before


def test_job_spec_carries_the_budget_to_the_parties():
    """job.toml's [lkc] suppress/suppressed survive the wire and enter the fingerprint."""
    from fedanon.federation.lkc_job import lkc_job_from_proto, lkc_job_to_proto
    from fedanon.leader.kinds.lkc import spec_from_table
    from fedanon.taxonomy.files import TaxonomyFile

    schema, _ = _city_case()
    taxonomy = TaxonomyFile({"city": schema.taxonomies[0]})
    section = {
        "K": 3,
        "preset": "k-anonymity",
        "qids": ["city"],
        "suppress": Fraction(1, 50),
        "suppressed": "drop",
    }
    spec = spec_from_table(section, taxonomy, "test")
    back = lkc_job_from_proto(lkc_job_to_proto(spec))
    assert (back.suppress, back.suppressed_mode) == (Fraction(1, 50), "drop")
    assert "suppress:1/50,drop" in back.fingerprint_items(schema)
    plain = lkc_job_from_proto(
        lkc_job_to_proto(spec_from_table({**section, "suppress": None}, taxonomy, "test"))
    )
    assert plain.suppress == 0
    assert not any(i.startswith("suppress:") for i in plain.fingerprint_items(schema))
