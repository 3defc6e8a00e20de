"""``sim lkc --html --report``: the report of a federated release over real party daemons."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import jsonschema
import pandas as pd
import pytest

from fedanon.report.build import SCHEMA_FILE
from tests.clirun import run_cli
from tests.report.conftest import write_inputs


@pytest.mark.slow
def test_sim_report_describes_the_integrated_release_and_hides_party_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: list[str] = []

    @contextlib.contextmanager
    def recording(title: str, quiet: bool) -> Iterator[Callable[[str], None]]:
        yield shown.append

    monkeypatch.setattr("fedanon.cli.sim.step_progress", recording)
    data, taxonomy = write_inputs(tmp_path, rows=600)
    out, report_path, html = tmp_path / "sim.csv", tmp_path / "sim.json", tmp_path / "sim.html"
    result = run_cli(
        "sim",
        "lkc",
        "--parties",
        "3",
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
        out,
        "--report",
        report_path,
        "--html",
        html,
        "--quiet",
    )
    assert result.code == 0, result.err
    report = json.loads(report_path.read_text())
    steward = report["release_report"]
    jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text())).validate(steward)
    assert steward["privacy_check"]["verdict"] == "holds"
    assert steward["privacy_check"]["details"] == report["privacy_check"]
    # The leader never learns a party's record count from the protocol's results.
    assert [p["records"] for p in steward["job"]["parties"]] == [None, None, None]
    assert [p["name"] for p in steward["job"]["parties"]] == report["parties"]
    release = pd.read_csv(out, dtype=str)
    assert steward["records"] == len(release) == 600
    assert (
        steward["equivalence_classes"]["smallest"] == release.groupby(["age", "job"]).size().min()
    )
    assert "not revealed by this job" in html.read_text(encoding="utf-8")
    assert "{" not in result.out
    # Progress moves through the union's phases after the last specialization.
    union = [line for line in shown if line.startswith("union:")]
    assert [line.split()[1:3] for line in union] == [
        ["3", "parties"],
        ["600", "sealed"],
        ["opening", "600"],
    ]
    assert shown.index(union[0]) > max(i for i, t in enumerate(shown) if t.startswith("iteration"))
