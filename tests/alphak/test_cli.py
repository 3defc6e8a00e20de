"""`fedanon anonymize alpha-k`, `check alpha-k` and `evaluate queries` end to end."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from tests.alphak.example import TABLE1
from tests.harness.cli import CliResult, run_cli, run_cli_process

TAXONOMY = '''
[attributes.job]
kind = "categorical"
tree = """
*
  white-collar
    clerk
    manager
  blue-collar
    factory worker
    technical supporter
"""
[attributes.birth]
kind = "categorical"
tree = """
*
  1940
  1955
  1975
"""
[attributes.postcode]
kind = "categorical"
tree = """
*
  4350
  5432
"""
'''
QID = "job,birth,postcode"


def _fedanon(*args: str) -> CliResult:
    return run_cli_process(*args, timeout=120)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "raw.csv"
    pd.concat([TABLE1] * 3, ignore_index=True).to_csv(data, index=False)
    taxonomy = tmp_path / "tax.toml"
    taxonomy.write_text(TAXONOMY)
    return {"data": data, "taxonomy": taxonomy, "dir": tmp_path}


def _anonymize(files: dict[str, Path], *extra: str) -> CliResult:
    return _fedanon(
        "anonymize", "alpha-k", "--data", str(files["data"]), "--qid", QID,
        "--sensitive-column", "illness", "--taxonomy", str(files["taxonomy"]), "--seed", "1",
        *extra,
    )  # fmt: skip


def test_local_release_passes_the_check(files: dict[str, Path]) -> None:
    out = files["dir"] / "local.csv"
    done = _anonymize(files, "--alpha", "0.5", "--k", "2", "--method", "local", "--out", str(out))
    assert done.code == 0, done.err
    released = pd.read_csv(out, dtype=str)
    assert len(released) == 18
    check = _fedanon(
        "check", "alpha-k", "--data", str(out), "--qid", QID, "--sensitive-column", "illness",
        "--alpha", "0.5", "--k", "2", "--json",
    )  # fmt: skip
    assert check.code == 0, check.err
    assert json.loads(check.out)["ok"] is True


def test_lossy_join_pair_with_note_and_its_check(files: dict[str, Path]) -> None:
    nss, ss = files["dir"] / "nss.csv", files["dir"] / "ss.csv"
    done = _anonymize(
        files, "--method", "lossy-join", "--alpha", "0.5", "--k", "2",
        "--nss", str(nss), "--ss", str(ss), "--json",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert json.loads(done.out)["min_class_size"] >= 2
    note = (files["dir"] / "nss.README.txt").read_text()
    assert "Each row of EACH table is one original record" in note
    assert list(pd.read_csv(nss, dtype=str).columns) == ["job", "birth", "postcode", "ClassID"]
    assert list(pd.read_csv(ss, dtype=str).columns) == ["ClassID", "illness"]
    pair = ["--nss", str(nss), "--ss", str(ss), "--sensitive-column", "illness", "--k", "2"]
    assert _fedanon("check", "alpha-k", *pair, "--alpha", "0.5").code == 0
    violated = _fedanon("check", "alpha-k", *pair, "--alpha", "0.4")
    assert violated.code == 1
    assert "VIOLATED" in violated.out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--alpha", "0"], "alpha must be in (0, 1]"),
        (["--alpha", "1.5"], "alpha must be in (0, 1]"),
        (["--k", "0"], "k must be an integer >= 1"),
        (["--sensitive-column", "job"], "sensitive column 'job' is also a QID"),
        (["--alpha", "0.4"], "infeasible"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    files: dict[str, Path], extra: list[str], message: str
) -> None:
    methods = (
        ("local", ["--out", "o.csv"]),
        ("lossy-join", ["--nss", "n.csv", "--ss", "s.csv"]),
        ("anatomy", ["--nss", "n.csv", "--ss", "s.csv"]),
    )
    # Parameter errors are method-independent (one method suffices); infeasibility is checked
    # for each method, since each has its own code path.
    for method, outputs in methods if message == "infeasible" else methods[1:2]:
        paths = [str(files["dir"] / p) if p.endswith(".csv") else p for p in outputs]
        done = _anonymize(files, "--method", method, *paths, *extra)
        assert done.code != 0
        assert message in done.err
        assert len(done.err.strip().splitlines()) == 1
        assert "Traceback" not in done.err
    assert sorted(p.name for p in files["dir"].iterdir()) == ["raw.csv", "tax.toml"]


def test_pair_is_written_whole_or_not_at_all(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rename that fails after NSS was renamed leaves neither NSS, SS nor the reading note."""
    from fedanon import outputs

    rename = os.replace

    def failing_on_ss(source: Path, target: Path) -> None:
        if Path(target).name == "ss.csv":
            raise OSError(28, "No space left on device")
        rename(source, target)

    monkeypatch.setattr(outputs.os, "replace", failing_on_ss)
    d = files["dir"]
    done = run_cli(
        "anonymize", "alpha-k", "--data", files["data"], "--qid", QID,
        "--sensitive-column", "illness", "--taxonomy", files["taxonomy"], "--alpha", "0.5",
        "--method", "lossy-join", "--nss", d / "nss.csv", "--ss", d / "ss.csv", "--quiet",
    )  # fmt: skip
    assert done.code != 0
    assert "none was written" in done.err
    assert sorted(p.name for p in d.iterdir()) == ["raw.csv", "tax.toml"]


def test_evaluate_queries_reports_every_release_and_draws_the_chart(
    files: dict[str, Path],
) -> None:
    d = files["dir"]
    local = _anonymize(files, "--alpha", "0.5", "--method", "local", "--out", str(d / "g.csv"))
    assert local.code == 0
    assert (
        _anonymize(
            files, "--alpha", "0.5", "--method", "lossy-join",
            "--nss", str(d / "n.csv"), "--ss", str(d / "s.csv"),
        ).code
        == 0
    )  # fmt: skip
    done = _fedanon(
        "evaluate", "queries", "--data", str(files["data"]), "--qid", QID,
        "--sensitive-column", "illness", "--taxonomy", str(files["taxonomy"]),
        "--release", f"Alpha={d / 'g.csv'}", "--release", f"raw={files['data']}",
        "--nss", f"Lossy={d / 'n.csv'}", "--ss", str(d / "s.csv"),
        "--qd", "2", "--s", "0.3", "--queries", "50", "--qd-values", "1,2,3",
        "--s-values", "0.2,0.5", "--report", str(d / "q.json"), "--chart", str(d / "q.png"),
    )  # fmt: skip
    assert done.code == 0, done.err
    report = json.loads((d / "q.json").read_text())
    assert report["releases"] == ["Alpha", "raw", "Lossy"]
    assert report["default"]["raw"]["average_relative_error"] == 0.0
    assert report["default"]["Alpha"]["average_relative_error"] > 0.0
    assert [p["qd"] for p in report["by_qd"]] == [1, 2, 3]
    assert [p["s"] for p in report["by_s"]] == [0.2, 0.5]
    assert (d / "q.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_evaluate_queries_needs_pairs(files: dict[str, Path]) -> None:
    done = _fedanon(
        "evaluate", "queries", "--data", str(files["data"]), "--qid", QID,
        "--sensitive-column", "illness", "--nss", "a.csv",
    )  # fmt: skip
    assert done.code == 2
    assert "give them in pairs" in done.err
