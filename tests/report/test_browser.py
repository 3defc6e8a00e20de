"""The HTML report rendered by a real browser (Debian's headless Chromium).

The DOM Chromium builds is compared with the JSON report: every figure the page marks with
``data-field`` must read as the JSON value at that path (to the page's display precision), and
the headline figures must all be there. A screenshot proves the page renders to pixels.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from fedanon.readers.datadir import data_dir, have_data
from tests.harness.cli import run_cli
from tests.report.conftest import ReportRun, suppression_job, write_inputs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (.ci/run installs it with apt)"
)
HEADLINE = {
    "records",
    "privacy_check.verdict",
    "information_loss.overall_ncp",
    "equivalence_classes.count",
    "equivalence_classes.smallest",
    "risk.prosecutor.highest",
    "risk.prosecutor.average",
    "risk.prosecutor.records_at_risk",
    "risk.marketer.expected_share",
    "max_confidence.0.confidence",
    "max_confidence.0.confidence_at_L",
    "utility.discernibility_ratio",
    "utility.classification_metric",
}


def _chromium(*args: str) -> subprocess.CompletedProcess:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}


class _Fields(HTMLParser):
    """Text of every element carrying ``data-field`` in the rendered DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, str] = {}
        self._open: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:  # no end tag follows: keep the stack of open elements aligned
            return
        self._open.append(dict(attrs).get("data-field"))
        if self._open[-1] is not None:
            self.fields[self._open[-1]] = ""

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for name in self._open:
            if name is not None:
                self.fields[name] += data


def _at(report: dict[str, Any], path: str) -> Any:
    value: Any = report
    for part in path.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _assert_reads_as(text: str, value: Any, path: str) -> None:
    """A displayed figure equals the JSON value: percentages to 0.005 %, counts exactly."""
    text = text.strip()
    if isinstance(value, str):
        assert text == value, path
    elif text.endswith("%"):
        assert abs(float(text.rstrip("% ")) / 100 - value) <= 0.00005 + 1e-12, (path, text, value)
    elif isinstance(value, int):
        assert int(text.replace(",", "")) == value, (path, text, value)
    else:
        assert abs(float(text.replace(",", "")) - value) <= 0.005 + 1e-12, (path, text, value)


def _assert_page_matches(html: Path, report: dict[str, Any], required: set[str]) -> None:
    """Chromium's DOM of `html` shows every `required` field, each equal to the JSON's."""
    dom = _chromium("--dump-dom", html.resolve().as_uri()).stdout
    parser = _Fields()
    parser.feed(dom)
    assert parser.fields.keys() >= required, required - parser.fields.keys()
    for path, text in parser.fields.items():
        _assert_reads_as(text, _at(report, path), path)
    for i in range(len(report["attributes"])):
        assert f"attributes.{i}.ncp" in parser.fields


def test_rendered_page_shows_the_json_reports_numbers(lkc_report: ReportRun) -> None:
    report = json.loads(lkc_report.report.read_text())["release_report"]
    _assert_page_matches(lkc_report.html, report, HEADLINE)


def test_rendered_suppression_page_shows_the_suppressed_shares(tmp_path: Path) -> None:
    data, _ = write_inputs(tmp_path, rows=400)
    html, report_path = tmp_path / "k.html", tmp_path / "k.json"
    result = run_cli(
        *suppression_job(data, "kactus"),
        "--out",
        tmp_path / "k.csv",
        "--report",
        report_path,
        "--html",
        html,
    )
    assert result.code == 0, result.err
    report = json.loads(report_path.read_text())["release_report"]
    required = {
        "risk.prosecutor.highest",
        "attributes.0.suppressed_share",
        "attributes.1.suppressed_share",
        "information_loss.overall_ncp",
    }
    _assert_page_matches(html, report, required)


@pytest.mark.slow
@pytest.mark.skipif(not have_data("adult", "adult_all.csv"), reason="no shared Adult data")
def test_rendered_adult_report_shows_the_json_reports_numbers(tmp_path: Path) -> None:
    """The example of docs/steward-guide.md: Adult, L = 4, K = 20, C = 0.2."""
    adult = data_dir() / "adult"
    html, report_path = tmp_path / "adult.html", tmp_path / "adult.json"
    result = run_cli(
        "anonymize",
        "lkc",
        "--data",
        adult / "adult_all.csv",
        "--taxonomy",
        adult / "lkc_paper_taxonomy.hchy",
        "--L",
        "4",
        "--k",
        "20",
        "--C",
        "0.2",
        "--out",
        tmp_path / "release.csv",
        "--report",
        report_path,
        "--html",
        html,
        "--quiet",
    )
    assert result.code == 0, result.err
    report = json.loads(report_path.read_text())["release_report"]
    _assert_page_matches(html, report, HEADLINE | {"max_confidence.1.confidence"})
    # The figures the guide quotes for this run.
    assert report["equivalence_classes"]["count"] == 49
    assert report["risk"]["prosecutor"]["highest"] == pytest.approx(1 / 21)
    assert report["information_loss"]["overall_ncp"] == pytest.approx(0.8183, abs=5e-5)


def test_rendered_page_screenshot_has_content(tmp_path: Path, lkc_report: ReportRun) -> None:
    shot = tmp_path / "report.png"
    _chromium("--window-size=1000,1400", f"--screenshot={shot}", lkc_report.html.resolve().as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1000, 1400)
    assert len(data) > 20_000  # a blank page compresses to a few hundred bytes
