"""``fedanon anonymize lkc`` end to end: a release that passes the checker, and bad input that is
answered with one line, a non-zero exit code and no output file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.cli import TAXONOMY, CliResult, run_cli_process, small_table


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    taxonomy = tmp_path / "taxonomy.toml"
    taxonomy.write_text(TAXONOMY, encoding="utf-8")
    data = tmp_path / "data.csv"
    data.write_text(small_table(), encoding="utf-8")
    return {"taxonomy": taxonomy, "data": data, "out": tmp_path / "out.csv"}


def _run(*args: str | Path) -> CliResult:
    return run_cli_process(*args, timeout=120)


def _anonymize(files: dict[str, Path], *extra: str | Path, data: Path | None = None):
    return _run(
        "anonymize",
        "lkc",
        "--data",
        data or files["data"],
        "--taxonomy",
        files["taxonomy"],
        "--drop",
        "pid",
        "--out",
        files["out"],
        "--quiet",
        *extra,
    )


def test_release_passes_checker_and_report_is_written(files, tmp_path):
    report = tmp_path / "r.json"
    done = _anonymize(files, "--L", "2", "--k", "4", "--C", "0.5", "--report", report)
    assert done.code == 0, done.err
    check = _run(
        "check",
        "lkc",
        "--data",
        files["out"],
        "--taxonomy",
        files["taxonomy"],
        "--L",
        "2",
        "--k",
        "4",
        "--C",
        "0.5",
    )
    assert check.code == 0, check.out + check.err
    content = json.loads(report.read_text())
    assert content["groups"]["min_group_size"] >= 4
    assert "pid" not in files["out"].read_text().splitlines()[0].split(",")


def _expect_error(done: CliResult, files, pattern: str, code: int = 2):
    assert done.code == code, done.out + done.err
    lines = done.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fedanon: error:"), done.err
    assert pattern in lines[0], lines[0]
    assert "Traceback" not in done.err
    assert not files["out"].exists()
    assert not any(p.name.startswith(".out.csv") for p in files["out"].parent.iterdir())


def test_missing_file(files, tmp_path):
    done = _anonymize(files, "--L", "2", "--k", "2", "--C", "1", data=tmp_path / "none.csv")
    _expect_error(done, files, "file not found")


def test_wrong_delimiter(files, tmp_path):
    semi = tmp_path / "semi.csv"
    semi.write_text(small_table().replace(",", ";"), encoding="utf-8")
    done = _anonymize(files, "--L", "2", "--k", "2", "--C", "1", "--delimiter", ",", data=semi)
    _expect_error(done, files, "looks ';'-separated")  # detected without --delimiter


def test_unknown_value(files, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text(small_table().replace("Lawyer", "Pilot", 1), encoding="utf-8")
    done = _anonymize(files, "--L", "2", "--k", "2", "--C", "1", data=bad)
    _expect_error(done, files, "'Pilot'")
    assert "row 4" in done.err and "job" in done.err


def test_missing_column(files, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text(small_table().replace("job", "occupation", 1), encoding="utf-8")
    done = _anonymize(files, "--L", "2", "--k", "2", "--C", "1", data=bad)
    _expect_error(done, files, "'job'")


def test_k_larger_than_table(files):
    done = _anonymize(files, "--L", "2", "--k", "41", "--C", "1")
    _expect_error(done, files, "fewer than K=41", code=3)


def test_infeasible_c(files):
    done = _anonymize(files, "--L", "2", "--k", "2", "--C", "0.05")
    _expect_error(done, files, "disease=HIV", code=3)


def test_empty_table(files, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("pid,age,job,disease,outcome\n", encoding="utf-8")
    done = _anonymize(files, "--L", "2", "--k", "2", "--C", "1", data=empty)
    _expect_error(done, files, "no records")


def test_non_numeric_value_in_numeric_qid(files, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text(small_table().replace("\n5,35,", "\n5,thirty,", 1), encoding="utf-8")
    done = _anonymize(files, "--L", "2", "--k", "2", "--C", "1", data=bad)
    _expect_error(done, files, "'thirty'")
    assert "not a number" in done.err


def test_bad_parameters(files):
    _expect_error(_anonymize(files, "--L", "0", "--k", "2", "--C", "1"), files, "L must be")
    _expect_error(_anonymize(files, "--L", "2", "--k", "2", "--C", "1.5"), files, "C must be")


@pytest.mark.parametrize("report_file", [False, True])
def test_summary_and_report_name_the_check_that_ran(files, tmp_path, report_file):
    """Every release is checked before it is written, so the summary says so (with or without
    a report file; it once printed "not checked"), and the report carries that same verdict."""
    report = tmp_path / "r.json"
    extra = ["--report", report] if report_file else []
    done = _anonymize(files, "--L", "2", "--k", "4", "--C", "0.5", "--json", *extra)
    assert done.code == 0, done.err
    printed = json.loads(done.out)
    steward = printed["release_report"]
    assert steward["privacy_check"]["verdict"] == "holds"
    assert steward["privacy_check"]["details"] == printed["privacy_check"]
    assert steward["assessment"]["holds_for"]
    if report_file:
        assert json.loads(report.read_text())["release_report"]["privacy_check"]["verdict"] == (
            "holds"
        )
    plain = _anonymize(files, "--L", "2", "--k", "4", "--C", "0.5")
    assert plain.code == 0, plain.err
    assert "not checked" not in plain.out
    assert any("privacy check" in line and "holds" in line for line in plain.out.splitlines()), (
        plain.out
    )
