"""``sim lkc --html --report``: the report of a federated release over real party daemons."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.harness.cli import run_cli
from tests.report.conftest import lkc_job, steward_report, write_inputs


@pytest.mark.slow
def test_sim_report_describes_the_integrated_release_and_hides_party_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: list[str] = []

    class Recorder:
        """The progress line of the command: steps and phases, recorded in order."""

        def __call__(self, text: str) -> None:
            shown.append(text)

        def phase(self, text: str) -> None:
            shown.append(text)

    @contextlib.contextmanager
    def recording(title: str, quiet: bool) -> Iterator[Recorder]:
        yield Recorder()

    monkeypatch.setattr("fedanon.cli.sim.step_progress", recording)
    data, taxonomy = write_inputs(tmp_path, rows=600)
    out, report_path, html = tmp_path / "sim.csv", tmp_path / "sim.json", tmp_path / "sim.html"
    outputs = ("--out", out, "--report", report_path, "--html", html, "--quiet")
    sim = ("sim", "lkc", "--parties", "3", "--pad-to", "400")
    result = run_cli(*sim, *lkc_job(data, taxonomy), *outputs)
    assert result.code == 0, result.err
    report = json.loads(report_path.read_text())
    steward = steward_report(report_path)
    assert steward["privacy_check"]["verdict"] == "holds"
    assert steward["privacy_check"]["details"] == report["privacy_check"]
    # Padded batches hide each party's record count from the leader: the report shows none.
    assert report["party_records"] is None
    assert [p["records"] for p in steward["job"]["parties"]] == [None, None, None]
    assert [p["name"] for p in steward["job"]["parties"]] == report["parties"]
    release = pd.read_csv(out, dtype=str)
    assert steward["records"] == len(release) == 600
    assert (
        steward["equivalence_classes"]["smallest"] == release.groupby(["age", "job"]).size().min()
    )
    assert "not revealed by this job" in html.read_text(encoding="utf-8")
    # The release the leader wrote is named with its digest; the parties' inputs are not held.
    assert steward["release"] == {"path": str(out), "sha256": _sha256(out)}
    assert [a["input_distinct"] for a in steward["attributes"]] == [None, None]
    assert "{" not in result.out
    # Progress moves through the union's phases after the last specialization.
    union = [line for line in shown if line.startswith("union:")]
    assert union == [
        "union: measure: 3 parties measure their records",
        "union: measure: done; records of 64 bytes",
        "union: collect: 3 parties seal their records in layers",
        "union: collect: done; 1,200 sealed items",  # padded: 600 records
        "union: strip: 3 parties peel 1,200 items in turn",
        "union: strip: done",
        "union: opening 1,200 peeled items as they arrive from hospital-3",
        "union: opening: done; 600 records",
        "union: done; 600 records",
    ]
    assert shown.index(union[0]) > max(i for i, t in enumerate(shown) if t.startswith("iteration"))


@pytest.mark.slow
def test_sim_report_lists_party_counts_the_union_revealed(tmp_path: Path) -> None:
    data, taxonomy = write_inputs(tmp_path, rows=600)
    report_path, html = tmp_path / "sim.json", tmp_path / "sim.html"
    outputs = ("--out", tmp_path / "sim.csv", "--report", report_path, "--html", html, "--quiet")
    sim = ("sim", "lkc", "--parties", "3", "--split", "by-column=job")
    result = run_cli(*sim, *lkc_job(data, taxonomy), *outputs)
    assert result.code == 0, result.err
    # by-column=job: jobs sorted Clerk, Janitor, Lawyer, Mover go to parties 1, 2, 3, 1; every
    # job holds 150 of the 600 rows, so the parties hold 300, 150 and 150 records.
    expected = [300, 150, 150]
    steward = json.loads(report_path.read_text())["release_report"]
    assert [p["records"] for p in steward["job"]["parties"]] == expected
    assert "not revealed" not in html.read_text(encoding="utf-8")
    assert "records per party" in result.out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
