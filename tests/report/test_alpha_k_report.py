"""``anonymize alpha-k --html --report`` (global and local recoding)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.harness.cli import run_cli
from tests.report.conftest import steward_report, write_inputs


def _alpha_k(data: Path) -> tuple[str | Path, ...]:
    """``anonymize alpha-k`` of `write_inputs`: QIDs age and job, sensitive outcome."""
    return (
        "anonymize",
        "alpha-k",
        "--data",
        data,
        "--qid",
        "age,job",
        "--sensitive-column",
        "outcome",
    )


@pytest.mark.parametrize("method", ["global", "local"])
def test_alpha_k_report_bounds_every_sensitive_value(tmp_path: Path, method: str) -> None:
    data, taxonomy = write_inputs(tmp_path, rows=400)
    out, report_path, html = tmp_path / "out.csv", tmp_path / "r.json", tmp_path / "r.html"
    result = run_cli(
        *_alpha_k(data),
        "--alpha",
        "0.9",
        "--k",
        "5",
        "--method",
        method,
        "--taxonomy",
        taxonomy,
        "--seed",
        "1",
        "--out",
        out,
        "--report",
        report_path,
        "--html",
        html,
    )
    assert result.code == 0, result.err
    steward = steward_report(report_path)
    assert steward["privacy_check"]["verdict"] == "holds"
    release = pd.read_csv(out, dtype=str, keep_default_na=False)
    shares = release.groupby(["age", "job"])["outcome"].value_counts(normalize=True)
    confidence = {m["value"]: m["confidence"] for m in steward["max_confidence"]}
    assert set(confidence) == {"no", "yes"}
    for value in ("no", "yes"):
        assert confidence[value] == pytest.approx(shares.xs(value, level="outcome").max())
        assert confidence[value] <= 0.9
    # age released as [0-50) / [50-100) halves of [0-100): NCP 1/2 each; job kept: NCP 0
    ncp = {a["name"]: a["ncp"] for a in steward["attributes"]}
    expected_age = release["age"].map(lambda v: 0.5 if v.startswith("[") else 0.0).mean()
    assert ncp["age"] == pytest.approx(expected_age)
    assert "alpha = 9/10" in html.read_text(encoding="utf-8")


def test_html_is_refused_for_a_pair_release(tmp_path: Path) -> None:
    data, _ = write_inputs(tmp_path, rows=100)
    result = run_cli(
        *_alpha_k(data),
        "--method",
        "anatomy",
        "--nss",
        tmp_path / "n.csv",
        "--ss",
        tmp_path / "s.csv",
        "--html",
        tmp_path / "r.html",
    )
    assert result.code == 2 and len(result.err_lines) == 1 and "--html" in result.err
