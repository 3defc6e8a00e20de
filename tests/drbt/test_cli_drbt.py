"""`anonymize drbt` / `evaluate drbt` through the CLI (tests/harness/cli.py, in-process)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.harness.cli import assert_one_line_error, run_cli


@pytest.fixture
def table(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "in" / "patients.csv"
    path.parent.mkdir()
    pd.DataFrame(
        {
            "pid": [f"P{i}" for i in range(80)],
            "age": rng.integers(20, 90, 80),
            "weight": rng.normal(75, 12, 80).round(1),
            "h_rate": rng.normal(70, 9, 80).round(),
            "qrs": rng.normal(90, 10, 80).round(),
        }
    ).to_csv(path, index=False)
    return path


def test_anonymize_writes_only_the_release_map_and_report(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run_cli(
        *("anonymize", "drbt", "--data", table, "--id", "pid", "--n-components", "2"),
        *("--matrix", "gaussian", "--seed", "123456789", "--out", out / "rel.csv"),
        *("--id-map", out / "map.csv", "--report", out / "rep.json", "--json"),
    )
    assert done.code == 0, done.err
    assert sorted(p.name for p in out.iterdir()) == ["map.csv", "rel.csv", "rep.json"]
    assert sorted(p.name for p in table.parent.iterdir()) == ["patients.csv"]
    release = pd.read_csv(out / "rel.csv")
    assert list(release.columns) == ["pid", "att1", "att2"] and len(release) == 80
    report = json.loads((out / "rep.json").read_text())
    assert report["columns"] == ["age", "weight", "h_rate", "qrs"] and report["seeded"] is True
    # Neither the matrix nor the seed that determines it is written or printed.
    everything = (out / "rep.json").read_text() + done.out
    assert "123456789" not in everything and 'matrix": "gaussian' in everything


def test_anonymize_user_errors(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel.csv"
    drbt = ["anonymize", "drbt", "--data", str(table), "--out", str(out)]
    refusals = {
        "needs --id": [*drbt, "--n-components", "2", "--id-map", str(tmp_path / "map.csv")],
        "column 'pid', data row 1: 'P0'": [*drbt, "--n-components", "2"],
        "choose fewer than 4": [*drbt, "--id", "pid", "--n-components", "4"],
    }
    for message, argv in refusals.items():
        assert message in assert_one_line_error(run_cli(*argv))
    assert not out.exists()


def test_evaluate_writes_report_and_png(table: Path, tmp_path: Path) -> None:
    done = run_cli(
        *("evaluate", "drbt", "--data", table, "--columns", "age,weight,h_rate,qrs"),
        *("--n-components", "3", "--seed", "4", "--trials", "3", "--projections", "2"),
        *("--clusters", "2,3", "--kept-dims", "3,2", "--starts", "independent", "--quiet"),
        *("--report", tmp_path / "ev.json", "--chart", tmp_path / "ev.png"),
    )
    assert done.code == 0, done.err
    report = json.loads((tmp_path / "ev.json").read_text())
    assert [p["kept"] for p in report["stress"]["curve"]] == [3, 2]
    assert [s["K"] for s in report["f_measure"]["by_clusters"]] == [2, 3]
    assert report["f_measure"]["starts"] == "independent"
    assert (tmp_path / "ev.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*.tmp"))


def test_evaluate_rejects_bad_lists(table: Path) -> None:
    done = run_cli(  # a usage error, refused by the parser
        *("evaluate", "drbt", "--data", table, "--id", "pid", "--n-components", "2"),
        *("--clusters", "2,three"),
    )
    assert done.code == 2
    assert "--clusters: expected comma-separated integers" in done.err
