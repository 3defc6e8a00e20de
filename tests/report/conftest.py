"""A small LKC job whose release, JSON report and HTML page the report tests read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.clirun import TAXONOMY, CliResult, run_cli, small_table


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


@pytest.fixture
def lkc_report(tmp_path: Path) -> ReportRun:
    data, taxonomy = write_inputs(tmp_path)
    release, report, html = tmp_path / "out.csv", tmp_path / "report.json", tmp_path / "r.html"
    result = run_cli(
        "anonymize",
        "lkc",
        "--data",
        data,
        "--taxonomy",
        taxonomy,
        "--L",
        "2",
        "--K",
        "5",
        "--C",
        "0.5",
        "--drop",
        "pid",
        "--out",
        release,
        "--report",
        report,
        "--html",
        html,
        "--quiet",
    )
    assert result.code == 0, result.err
    return ReportRun(data, taxonomy, release, report, html, result)
