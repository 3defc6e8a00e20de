"""The verdict at a glance: for whom "holds" holds, a visible warning over ALL QIDs, what next.

LKC-privacy at L < N bounds an attacker who knows at most L QIDs; records unique over all N
QIDs stay re-identifiable by one who knows them all. The report must say so next to the
verdict, where a browser shows it without scrolling, and end with the changes that help, each
attribute's distinct values before and after, the release's SHA-256 and the exact command.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PIL import Image

from fedanon.readers.datadir import data_dir, have_data
from tests.harness.cli import run_cli
from tests.report.conftest import steward_report, suppression_job, write_inputs
from tests.report.test_browser import _assert_page_matches

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WARNING_RGB = (255, 216, 181)  # the warning box's background (fedanon/report/html.py)

# Three QIDs, each value in half the records: every single value is shared by 4 records
# (L = 1, K = 4 holds with no generalization), yet every record is unique over all three.
TAXONOMY = """
qids = ["a", "b", "c"]
[attributes.a]
kind = "categorical"
tree = "Any\\n  a0\\n  a1\\n"
[attributes.b]
kind = "categorical"
tree = "Any\\n  b0\\n  b1\\n"
[attributes.c]
kind = "categorical"
tree = "Any\\n  c0\\n  c1\\n"
"""


def _job(tmp_path: Path, *options: str) -> tuple[dict[str, Any], Path, Path]:
    tmp_path.mkdir(exist_ok=True)
    data, taxonomy = tmp_path / "t.csv", tmp_path / "t.toml"
    rows = [
        f"{a},{b},{c}" for a, b, c in itertools.product(("a0", "a1"), ("b0", "b1"), ("c0", "c1"))
    ]
    data.write_text("a,b,c\n" + "\n".join(rows) + "\n", encoding="utf-8")
    taxonomy.write_text(TAXONOMY, encoding="utf-8")
    out, report, html = tmp_path / "out.csv", tmp_path / "r.json", tmp_path / "r.html"
    result = run_cli(
        *("anonymize", "lkc", "--data", data, "--taxonomy", taxonomy, "--C", "1"),
        *options,
        *("--out", out, "--report", report, "--html", html, "--quiet"),
    )
    assert result.code == 0, result.err
    return steward_report(report), out, html


def _unique_over_all(release: Path, qids: list[str]) -> int:
    sizes = pd.read_csv(release, dtype=str).groupby(qids).size()
    return int(sizes[sizes == 1].sum())


def test_holds_at_l_below_n_names_its_attacker_and_warns(tmp_path: Path) -> None:
    report, out, _ = _job(tmp_path, "--L", "1", "--k", "4")
    assert report["privacy_check"]["verdict"] == "holds"
    assessment = report["assessment"]
    assert assessment["holds_for"] == "an attacker who knows at most L = 1 of the 3 QIDs"
    assert assessment["unique_records"] == _unique_over_all(out, ["a", "b", "c"]) == 8
    assert [w["code"] for w in assessment["warnings"]] == ["unique_records", "records_at_risk"]
    assert assessment["warnings"][0]["message"].startswith("8 records are unique over all 3 QIDs")
    steps = " ".join(assessment["next_steps"])
    assert "L = 3" in steps and "--suppress" in steps and "Fewer QIDs" in steps
    assert report["release"] == {
        "path": str(out),
        "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
    }
    assert "--L 1 --k 4" in report["job"]["command_line"]
    assert report["job"]["command_line"].startswith("fedanon anonymize lkc --data ")
    assert [(a["input_distinct"], a["release_distinct"]) for a in report["attributes"]] == [
        (2, 2)
    ] * 3


def test_holds_over_all_qids_without_records_at_risk_gives_no_warning(tmp_path: Path) -> None:
    report, out, _ = _job(tmp_path, "--L", "3", "--k", "2", "--risk-threshold", "0.5")
    assessment = report["assessment"]
    assert assessment["holds_for"] == "an attacker who knows all 3 QIDs"
    assert assessment["unique_records"] == _unique_over_all(out, ["a", "b", "c"]) == 0
    assert assessment["warnings"] == []
    assert "No record is unique" in assessment["next_steps"][0]


def test_check_report_names_the_checked_file_and_warns(tmp_path: Path) -> None:
    _, out, _ = _job(tmp_path, "--L", "1", "--k", "4")
    report_path = tmp_path / "check.json"
    result = run_cli(
        *("check", "lkc", "--data", out, "--qid", "a,b,c", "--L", "1", "--k", "4"),
        *("--report", report_path),
    )
    assert result.code == 0, result.err
    report = steward_report(report_path)
    assert report["release"]["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert report["assessment"]["unique_records"] == 8
    assert report["assessment"]["warnings"][0]["code"] == "unique_records"


def _warning_pixels(html: Path, tmp_path: Path) -> int:
    """Pixels of the warning colour in the first screen (1000 x 900) Chromium paints."""
    assert CHROMIUM is not None
    shot = tmp_path / f"{html.stem}.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1000,900",
            f"--screenshot={shot}",
            html.resolve().as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None
    return sum(n for n, rgb in colours if rgb == WARNING_RGB)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_browser_shows_the_warning_above_the_fold(tmp_path: Path) -> None:
    risky, _, risky_html = _job(tmp_path / "risky", "--L", "1", "--k", "4")
    safe, _, safe_html = _job(tmp_path / "safe", "--L", "3", "--k", "2", "--risk-threshold", "0.5")
    required = {
        "privacy_check.verdict",
        "assessment.holds_for",
        "assessment.warnings.0.message",
        "assessment.warnings.1.message",
        "assessment.next_steps.0",
        "release.sha256",
        "attributes.0.input_distinct",
        "attributes.0.release_distinct",
    }
    _assert_page_matches(risky_html, risky, required)
    _assert_page_matches(safe_html, safe, required - {m for m in required if "warnings" in m})
    assert _warning_pixels(risky_html, tmp_path) > 20_000  # two boxes of ~960 x 45 pixels
    assert _warning_pixels(safe_html, tmp_path) == 0


@pytest.mark.slow
@pytest.mark.skipif(not have_data("adult", "arx_adult.csv"), reason="no shared ARX Adult data")
def test_arx_adult_at_l2_warns_of_its_unique_records(tmp_path: Path) -> None:
    """The issue's case: ARX Adult, L = 2, K = 10, C = 1 holds, 16 records unique over all 9."""
    adult = data_dir() / "adult"
    out, report_path = tmp_path / "release.csv", tmp_path / "r.json"
    result = run_cli(
        *("anonymize", "lkc", "--data", adult / "arx_adult.csv"),
        *("--taxonomy", adult / "arx_hierarchies", "--L", "2", "--k", "10", "--C", "1"),
        *("--out", out, "--report", report_path, "--quiet"),
    )
    assert result.code == 0, result.err
    report = steward_report(report_path)
    qids = [a["name"] for a in report["attributes"]]
    release = pd.read_csv(out, sep=";", dtype=str, keep_default_na=False)
    sizes = release.groupby(qids).size()
    assert report["assessment"]["unique_records"] == int(sizes[sizes == 1].sum()) == 16
    assert report["assessment"]["holds_for"].endswith("at most L = 2 of the 9 QIDs")
    assert report["assessment"]["warnings"][0]["code"] == "unique_records"
    raw = pd.read_csv(adult / "arx_adult.csv", sep=";", dtype=str, keep_default_na=False)
    assert [a["input_distinct"] for a in report["attributes"]] == [raw[q].nunique() for q in qids]
    assert json.dumps(report).count(hashlib.sha256(out.read_bytes()).hexdigest()) == 1


def test_terminal_summary_says_for_whom_and_warns(tmp_path: Path) -> None:
    _job(tmp_path / "job", "--L", "1", "--k", "4")  # writes the inputs t.csv and t.toml
    result = run_cli(
        *("anonymize", "lkc", "--data", tmp_path / "job" / "t.csv"),
        *("--taxonomy", tmp_path / "job" / "t.toml", "--L", "1", "--k", "4", "--C", "1"),
        *("--out", tmp_path / "o.csv", "--report", tmp_path / "o.json"),
    )
    assert result.code == 0, result.err
    text = " ".join(result.out.split())
    assert "holds for │ an attacker who knows at most L = 1 of the 3 QIDs" in text
    assert "WARNING │ 8 records are unique over all 3 QIDs" in text


def test_suppression_and_alpha_k_reports_name_their_release_file(tmp_path: Path) -> None:
    """Every command that writes a release quotes its SHA-256 and the input's distinct values."""
    data, taxonomy = write_inputs(tmp_path, rows=400)
    raw = pd.read_csv(data, dtype=str)
    runs: dict[str, list[str | Path]] = {
        "kactus": suppression_job(data, "kactus"),
        "alpha-k": [
            *("anonymize", "alpha-k", "--data", data, "--taxonomy", taxonomy),
            *("--qid", "age,job", "--sensitive-column", "outcome", "--alpha", "0.9", "--k", "5"),
            *("--method", "global"),
        ],
    }
    for name, job in runs.items():
        out, report_path = tmp_path / f"{name}.csv", tmp_path / f"{name}.json"
        result = run_cli(*job, "--out", out, "--report", report_path)
        assert result.code == 0, (name, result.err)
        report = steward_report(report_path)
        assert report["release"]["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest(), name
        assert [a["input_distinct"] for a in report["attributes"]] == [
            raw["age"].nunique(),
            raw["job"].nunique(),
        ], name
