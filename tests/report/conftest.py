"""A small LKC job whose release, JSON report and HTML page the report tests read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fedanon.report.build import SCHEMA_FILE
from tests.harness.cli import TAXONOMY, CliResult, lkc_options, run_cli, small_table


@dataclass
class ReportRun:
    """Paths of one ``anonymize lkc --report --html`` run and what it printed."""

    data: Path
    taxonomy: Path
    release: Path
    report: Path
    html: Path
    result: CliResult


def write_inputs(tmp_path: Path, rows: int = 2400) -> tuple[Path, Path]:
    """A table large enough for thousands separators; HIV in 1 row of 10."""
    taxonomy = tmp_path / "taxonomy.toml"
    taxonomy.write_text(TAXONOMY, encoding="utf-8")
    data = tmp_path / "data.csv"
    data.write_text(small_table(rows), encoding="utf-8")
    return data, taxonomy


def lkc_job(data: Path, taxonomy: Path) -> list[str]:
    """The report tests' LKC job on `write_inputs`: L = 2, K = 5, C = 0.5, the id dropped."""
    return [*lkc_options(data, taxonomy, K=5), "--drop", "pid"]


def suppression_job(data: Path, method: str) -> list[str | Path]:
    """``anonymize kactus`` or ``mondrian`` of `write_inputs`: class outcome, k = 5, seed 1."""
    return [
        *("anonymize", method, "--data", data, "--class", "outcome", "--qid", "age,job"),
        *("--k", "5", "--seed", "1"),
    ]


def steward_report(report_path: Path) -> dict[str, Any]:
    """The ``release_report`` of a command's JSON report, validated against the schema."""
    steward = json.loads(report_path.read_text(encoding="utf-8"))["release_report"]
    jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text())).validate(steward)
    return dict(steward)


@pytest.fixture
def lkc_report(tmp_path: Path) -> ReportRun:
    data, taxonomy = write_inputs(tmp_path)
    release, report, html = tmp_path / "out.csv", tmp_path / "report.json", tmp_path / "r.html"
    outputs = ("--out", release, "--report", report, "--html", html, "--quiet")
    result = run_cli("anonymize", "lkc", *lkc_job(data, taxonomy), *outputs)
    assert result.code == 0, result.err
    return ReportRun(data, taxonomy, release, report, html, result)
