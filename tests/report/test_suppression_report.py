"""``anonymize kactus|mondrian --html --report``: the report of a release by suppression."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.harness.cli import run_cli
from tests.report.conftest import steward_report, suppression_job, write_inputs


@pytest.mark.parametrize("method", ["kactus", "mondrian"])
def test_suppression_report_matches_the_release(tmp_path: Path, method: str) -> None:
    data, _ = write_inputs(tmp_path, rows=400)
    out, report_path, html = tmp_path / "out.csv", tmp_path / "r.json", tmp_path / "r.html"
    outputs = ("--out", out, "--report", report_path, "--html", html)
    result = run_cli(*suppression_job(data, method), *outputs)
    assert result.code == 0, result.err
    steward = steward_report(report_path)
    release = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert steward["privacy_check"]["verdict"] == "holds"
    assert steward["privacy_check"]["details"]["k"] == 5
    for attribute in steward["attributes"]:
        share = float((release[attribute["name"]] == "?").mean())
        assert attribute["suppressed_share"] == pytest.approx(share)
        assert attribute["suppressed_share"] <= attribute["ncp"] <= 1
    sizes = release.groupby(["age", "job"]).size()
    assert steward["equivalence_classes"]["smallest"] == sizes.min() >= 5
    assert steward["utility"]["classification_metric"] is not None
    assert "suppressed" in html.read_text(encoding="utf-8")
