"""The thesis's sanitization results (appendix B) re-measured on Retail and BMS-WebView-1.

Retail with the thesis's rule-support definition (a rule's support is its antecedent's) matches
every data-sharing misses cost of condition C1 within 3 points and Dif within 0.15 points. BMS-1
does not match in absolute value (our 3,448 rules at sigma = 0.1% against the thesis's 25,391,
a difference no support definition removes), so for BMS-1 the tests check what does carry over:
Dif, the ranking of the algorithms, and HF = 0 at psi = 0. Kosarak and Reuters are not
available. docs/reproduction.md ("Sanitization") has the full tables and the explanations.
"""

from __future__ import annotations

import pytest

from fedanon.algorithms.sanitization import reproduce, thesis
from fedanon.readers.datadir import have_data

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_data("fimi"), reason="shared data directory absent"),
]


def _by_algorithm(rows):
    return {row["algorithm"]: row for row in rows}


def test_retail_s3_misses_cost_and_dif_within_three_points():
    rows = _by_algorithm(reproduce.run_condition_c1("retail", ["S3"], rule_support="antecedent"))
    for algorithm, row in rows.items():
        assert row["hf"] == 0.0, algorithm
        assert row["mc"] == pytest.approx(row["thesis_mc"], abs=3.0), algorithm
        if row["thesis_dif"] is not None:
            assert row["dif"] == pytest.approx(row["thesis_dif"], abs=0.15), algorithm
    assert rows["iga"]["mc"] == pytest.approx(66.31, abs=3.0)


def test_retail_iga_effect_of_psi():
    rows = reproduce.run_psi_sweep("retail", ["iga"], rule_support="antecedent")
    for row in rows:
        assert row["mc"] == pytest.approx(row["thesis_mc"], abs=3.0), row["psi"]
        assert row["hf"] == pytest.approx(row["thesis_hf"], abs=0.5), row["psi"]
    mcs = [row["mc"] for row in rows]
    assert mcs == sorted(mcs, reverse=True)  # more disclosure, fewer misses


def test_bms1_s3_dif_ranking_and_hiding():
    rows = _by_algorithm(reproduce.run_condition_c1("bms1", ["S3"]))
    assert all(row["hf"] == 0.0 for row in rows.values())
    for algorithm in ("iga", "swa"):
        assert rows[algorithm]["dif"] == pytest.approx(rows[algorithm]["thesis_dif"], abs=0.05)
    # Thesis order of misses cost: DSA < IGA < SWA < RA, RRA.
    assert rows["dsa"]["mc"] < rows["iga"]["mc"] < rows["swa"]["mc"]
    assert rows["swa"]["mc"] < min(rows["ra"]["mc"], rows["rra"]["mc"])


def test_retail_condition_c1_all_scenarios():
    rows = reproduce.run_condition_c1("retail", rule_support="antecedent")
    for row in rows:
        where = (row["scenario"], row["algorithm"])
        assert row["hf"] == 0.0, where
        if row["algorithm"] == "dsa" and row["scenario"] == "S2":
            continue  # one random pair decides DSA's S2 cost: see docs/reproduction.md
        assert row["mc"] == pytest.approx(row["thesis_mc"], abs=3.0), where
        if row["thesis_dif"] is not None:
            assert row["dif"] == pytest.approx(row["thesis_dif"], abs=0.15), where
    assert len(rows) == len(thesis.SCENARIOS) * len(thesis.ALGOS)


def test_swa_per_rule_thresholds_and_window_size_on_retail():
    rows = {
        row["setting"]: row
        for row in reproduce.run_swa_settings("retail", rule_support="antecedent")
    }
    per_rule = rows["K = 100,000, psi per rule"]
    # Table 7.7: MC 31.07, Dif 1.24; HF 7.45 (ours is lower, see docs/reproduction.md).
    assert per_rule["mc"] == pytest.approx(31.07, abs=3.0)
    assert per_rule["dif"] == pytest.approx(1.24, abs=0.05)
    assert 0.0 < per_rule["hf"] < 15.0
    # Table B.17's trend: larger windows lower the misses cost.
    assert rows["K = 500, psi = 25%"]["mc"] > rows["K = 100,000, psi = 25%"]["mc"]
