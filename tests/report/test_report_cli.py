"""The release report through the CLI: schema-valid JSON, the HTML page, the terminal summary."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path

import jsonschema
import pandas as pd
import pytest

from fedanon.report.build import SCHEMA_FILE
from tests.harness.cli import lkc_options, run_cli
from tests.report.conftest import ReportRun, lkc_job


def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_anonymize_report_validates_against_the_packaged_schema(lkc_report: ReportRun) -> None:
    report = json.loads(lkc_report.report.read_text())["release_report"]
    _validator().validate(report)
    assert report["schema"] == "fedanon-report/1"


def test_the_schema_rejects_a_report_missing_its_risk(lkc_report: ReportRun) -> None:
    report = json.loads(lkc_report.report.read_text())["release_report"]
    broken = copy.deepcopy(report)
    del broken["risk"]["prosecutor"]
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(broken)
    broken = copy.deepcopy(report)
    broken["risk"]["prosecutor"]["highest"] = 1.5
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(broken)


def test_report_describes_the_release_on_disk(lkc_report: ReportRun) -> None:
    report = json.loads(lkc_report.report.read_text())["release_report"]
    release = pd.read_csv(lkc_report.release, dtype=str)
    sizes = release.groupby(["age", "job"]).size()
    assert report["records"] == len(release) == 2400
    assert report["equivalence_classes"]["count"] == len(sizes)
    assert report["risk"]["prosecutor"]["highest"] == pytest.approx(1 / sizes.min())
    assert report["privacy_check"]["verdict"] == "holds"
    digest = hashlib.sha256(lkc_report.data.read_bytes()).hexdigest()
    assert report["job"]["inputs"][0]["sha256"] == digest
    kept = {a["name"]: a["kept_values"] for a in report["attributes"]}
    assert kept["job"] == sorted(release["job"].unique())


def test_centralized_report_names_no_party(lkc_report: ReportRun) -> None:
    report = json.loads(lkc_report.report.read_text())["release_report"]
    assert report["job"]["parties"] == []


def test_html_page_is_self_contained(lkc_report: ReportRun) -> None:
    page = lkc_report.html.read_text(encoding="utf-8")
    assert "<svg" in page
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:|//)", page)
    assert "<script" not in page


def test_terminal_summary_reads_in_plain_words(lkc_report: ReportRun) -> None:
    out = lkc_report.result.out
    assert "2,400" in out  # thousands separator
    assert re.search(r"highest \d+\.\d\d %", out)
    assert re.search(r"anonymize \d+\.\d\d s", out)
    assert "{" not in out and "}" not in out  # no dict text


def test_summary_lines_are_not_cut_at_80_columns(tmp_path: Path, lkc_report: ReportRun) -> None:
    # The output path is longer than 80 columns; a piped summary must keep it on one line.
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    job = lkc_job(lkc_report.data, lkc_report.taxonomy)
    result = run_cli("anonymize", "lkc", *job, "--out", deep / "out.csv", "--quiet")
    assert result.code == 0, result.err
    assert str(deep / "out.csv") in result.out


def test_check_writes_the_report_of_a_violating_release(
    tmp_path: Path, lkc_report: ReportRun
) -> None:
    html, report_path = tmp_path / "check.html", tmp_path / "check.json"
    job = lkc_options(lkc_report.release, lkc_report.taxonomy, K=100_000)
    result = run_cli("check", "lkc", *job, "--html", html, "--report", report_path)
    assert result.code == 1  # K is unreachable: violated, and still reported
    report = json.loads(report_path.read_text())["release_report"]
    _validator().validate(report)
    assert report["privacy_check"]["verdict"] == "violated"
    assert "violated" in html.read_text(encoding="utf-8")
    assert all(a["ncp"] is not None for a in report["attributes"])


def test_an_unwritable_html_path_fails_before_any_output(
    tmp_path: Path, lkc_report: ReportRun
) -> None:
    out = tmp_path / "fresh.csv"
    job = lkc_job(lkc_report.data, lkc_report.taxonomy)
    result = run_cli("anonymize", "lkc", *job, "--out", out, "--html", tmp_path, "--quiet")
    assert result.code != 0 and len(result.err_lines) == 1
    assert "--html" in result.err and "is a directory" in result.err and not out.exists()


def test_evaluate_summary_gives_errors_in_percent(tmp_path: Path, lkc_report: ReportRun) -> None:
    raw = tmp_path / "raw.csv"  # the raw table without the dropped ID column
    pd.read_csv(lkc_report.data, dtype=str).drop(columns=["pid"]).to_csv(raw, index=False)
    evaluate: tuple[str | Path, ...] = ("evaluate", "lkc", "--raw", raw)
    evaluate += ("--release", lkc_report.release, "--train-rows", "1600")
    evaluate += ("--taxonomy", lkc_report.taxonomy)
    result = run_cli(*evaluate)
    assert result.code == 0, result.err
    ce = re.search(r"classification error \(CE\)\s*│\s*(\d+\.\d\d) %", result.out)
    assert ce is not None, result.out
    again = run_cli(*evaluate, "--json")
    assert float(ce.group(1)) == pytest.approx(json.loads(again.out)["CE"], abs=0.005)
    assert re.search(r"test records\s*│\s*800\b", result.out)
