"""``fedanon sim lkc --workdir relwd`` with a relative directory (issue #10, defect 10): the
party configs written there must name their files so that each daemon finds them (a relative
path was resolved against the config's own directory, relwd/relwd/...)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fedanon.synth import generate_hospital, hospital_taxonomy_path
from tests.harness.cli import CliResult, run_cli


def _sim_lkc(rows: int, *extra: str) -> CliResult:
    """`fedanon sim lkc` at L=2, K=5, C=0.5 on `rows` synthetic records, into release.csv."""
    generate_hospital(rows, seed=4).to_csv("hospital.csv", index=False)
    taxonomy = str(hospital_taxonomy_path())
    return run_cli(
        *("sim", "lkc", "--data", "hospital.csv", "--taxonomy", taxonomy),
        *("--L", "2", "--k", "5", "--C", "0.5", "--out", "release.csv", "--quiet", *extra),
    )


def test_relative_workdir_is_used_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = _sim_lkc(300, "--parties", "3", "--drop", "patient_id", "--workdir", "relwd")
    assert done.code == 0, done.err
    assert len(pd.read_csv(tmp_path / "release.csv")) == 300
    assert sorted(p.name for p in (tmp_path / "relwd").glob("hospital-*.toml")) == [
        "hospital-1.toml",
        "hospital-2.toml",
        "hospital-3.toml",
    ]
    assert not (tmp_path / "relwd" / "relwd").exists()
    assert "audit: job served" in (tmp_path / "relwd" / "hospital-2.log").read_text()


def test_sim_names_a_sensitive_value_absent_from_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    done = _sim_lkc(100, "--sensitive-values", "diagnosis=HIVV")
    assert done.code == 2 and done.err_lines == [
        "fedanon: error: hospital.csv: sensitive value 'diagnosis=HIVV' occurs nowhere in "
        "column 'diagnosis'"
    ]
    assert not (tmp_path / "release.csv").exists()
