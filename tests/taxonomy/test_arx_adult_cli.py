"""ARX Adult as an ARX user brings it: a ``;``-separated table and the hierarchy folder, no other
option than the privacy parameters. Nothing is to be guessed: the delimiter is detected, the QIDs
are the attributes with a hierarchy, ages match by number, and the release keeps the ``;``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedanon.readers.datadir import data_dir, have_data
from tests.harness.cli import run_cli

pytestmark = pytest.mark.skipif(
    not have_data("adult", "arx_hierarchies") or not have_data("adult", "arx_adult.csv"),
    reason="shared ARX Adult data not found under the data dir (set FEDANON_DATA_DIR)",
)

ADULT = data_dir() / "adult"
HEADER = "sex;age;race;marital-status;education;native-country;workclass;occupation;salary-class"


def _first_rows(tmp_path: Path, n: int, *, float_ages: bool = False) -> Path:
    """The first `n` records of ARX Adult, as ARX ships them (or with ages written ``39.0``)."""
    lines = (ADULT / "arx_adult.csv").read_text(encoding="utf-8").splitlines()[: n + 1]
    if float_ages:
        lines = [lines[0]] + [
            ";".join([*f[:1], f"{f[1]}.0", *f[2:]]) for f in (line.split(";") for line in lines[1:])
        ]
    path = tmp_path / "adult.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _anonymize(data: Path, out: Path, *extra: str):
    return run_cli(
        "anonymize",
        "lkc",
        "--data",
        data,
        "--taxonomy",
        ADULT / "arx_hierarchies",
        "--L",
        "2",
        "--k",
        "10",
        "--C",
        "1",
        "--out",
        out,
        "--report",
        out.with_suffix(".json"),
        "--quiet",
        *extra,
    )


def test_arx_adult_runs_with_no_format_options(tmp_path: Path) -> None:
    out = tmp_path / "release.csv"
    result = _anonymize(_first_rows(tmp_path, 3000), out)
    assert result.code == 0, result.err
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["parameters"]["qids"] == HEADER.split(";")  # every attribute has a hierarchy
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == HEADER and len(lines) == 3001
    assert all(line.count(";") == 8 for line in lines)  # ARX's delimiter kept
    check = run_cli(
        "check",
        "lkc",
        "--data",
        out,
        "--taxonomy",
        ADULT / "arx_hierarchies",
        "--L",
        "2",
        "--k",
        "10",
    )
    assert check.code == 0, check.out + check.err


def test_class_with_a_hierarchy_is_not_a_default_qid(tmp_path: Path) -> None:
    out = tmp_path / "release.csv"
    result = _anonymize(_first_rows(tmp_path, 3000), out, "--class", "salary-class")
    assert result.code == 0, result.err
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["parameters"]["qids"] == HEADER.split(";")[:-1]
    assert report["parameters"]["score"] == "infogain"


def test_ages_match_their_hierarchy_by_number(tmp_path: Path) -> None:
    out = tmp_path / "release.csv"
    result = _anonymize(_first_rows(tmp_path, 500, float_ages=True), out)
    assert result.code == 0, result.err


def test_a_wrong_delimiter_is_named(tmp_path: Path) -> None:
    result = _anonymize(_first_rows(tmp_path, 100), tmp_path / "r.csv", "--delimiter", ",")
    assert result.code == 2
    assert len(result.err_lines) == 1
    assert "wrong delimiter" in result.err and "looks ';'-separated" in result.err
    assert not (tmp_path / "r.csv").exists()


def test_full_arx_adult(tmp_path: Path) -> None:
    out = tmp_path / "release.csv"
    result = _anonymize(ADULT / "arx_adult.csv", out)
    assert result.code == 0, result.err
    assert len(out.read_text(encoding="utf-8").splitlines()) == 30_162 + 1
