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

from tests.report.conftest import ReportRun

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


def test_rendered_page_shows_the_json_reports_numbers(
    tmp_path: Path, lkc_report: ReportRun
) -> None:
    report = json.loads(lkc_report.report.read_text())["release_report"]
    dom = _chromium("--dump-dom", lkc_report.html.resolve().as_uri()).stdout
    parser = _Fields()
    parser.feed(dom)
    assert parser.fields.keys() >= HEADLINE, HEADLINE - parser.fields.keys()
    for path, text in parser.fields.items():
        _assert_reads_as(text, _at(report, path), path)
    for i in range(len(report["attributes"])):
        assert f"attributes.{i}.ncp" in parser.fields


def test_rendered_page_screenshot_has_content(tmp_path: Path, lkc_report: ReportRun) -> None:
    shot = tmp_path / "report.png"
    _chromium("--window-size=1000,1400", f"--screenshot={shot}", lkc_report.html.resolve().as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1000, 1400)
    assert len(data) > 20_000  # a blank page compresses to a few hundred bytes
