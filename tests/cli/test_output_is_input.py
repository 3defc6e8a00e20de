"""Every command that writes files refuses an output naming its input (directly or through a
symlink) before any work: exit 2, one line on stderr, and the directory left byte for byte.

Without the shared output check a command reads its input, computes, and then overwrites it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.harness.cli import TAXONOMY, run_cli, small_table, snapshot

from .test_cli_output_safety import NUMERIC

TABLE = ["--data", "data.csv"]
LOG = ["--data", "log.dat", "--rules", "rules.txt"]

# command line without the output, the output option, the input it must not overwrite
CASES = [
    (["anonymize", "alpha-k", *TABLE, "--qid=age,job", "--sensitive-column=disease", "--alpha=0.5",
      "--k=2"], "--out", "data.csv"),
    (["anonymize", "alpha-k", *TABLE, "--qid=age,job", "--sensitive-column=disease", "--alpha=0.5",
      "--k=2", "--method=anatomy", "--ss=ss.csv"], "--nss", "data.csv"),
    (["anonymize", "alpha-k", *TABLE, "--qid=age,job", "--sensitive-column=disease", "--alpha=0.5",
      "--k=2", "--out=r.csv"], "--report", "data.csv"),
    (["anonymize", "kactus", *TABLE, "--class=outcome", "--k=2"], "--out", "data.csv"),
    (["anonymize", "mondrian", *TABLE, "--class=outcome", "--k=2"], "--out", "data.csv"),
    (["anonymize", "mondrian", *TABLE, "--class=outcome", "--k=2", "--out=r.csv"], "--report",
     "data.csv"),
    (["anonymize", "randomize", *TABLE, "--qid=age,job"], "--out", "data.csv"),
    (["sanitize", *LOG, "--algorithm=iga"], "--out", "log.dat"),
    (["sanitize", *LOG, "--algorithm=iga", "--out=clean.dat"], "--report", "rules.txt"),
    (["evaluate", "queries", *TABLE, "--qid=age,job", "--sensitive-column=disease",
      "--release=r=other.csv", "--qd=1", "--queries=5"], "--report", "other.csv"),
    (["evaluate", "queries", *TABLE, "--qid=age,job", "--sensitive-column=disease",
      "--release=data.csv", "--qd=1", "--queries=5"], "--chart", "data.csv"),
    (["evaluate", "classification", *TABLE, "--class=outcome", "--k=2"], "--report",
     "data.csv"),
    (["evaluate", "classification", *TABLE, "--class=outcome", "--k=2"], "--chart", "data.csv"),
    (["evaluate", "randomization", *TABLE, "--qid=age,job", "--no-rules"], "--report",
     "data.csv"),
    (["evaluate", "sanitize", *LOG, "--support=0.3", "--algorithms=iga", "--psi=0"],
     "--report", "log.dat"),
    (["evaluate", "sanitize", *LOG, "--support=0.3", "--algorithms=iga", "--psi=0"],
     "--chart", "rules.txt"),
    (["evaluate", "lkc", *TABLE, "--release=other.csv", "--taxonomy=taxonomy.toml",
      "--train-rows=20"], "--report", "other.csv"),
    (["sim", "randomize", *TABLE, "--qid=age,job"], "--out", "data.csv"),
    (["sim", "randomize", *TABLE, "--qid=age,job", "--out=r.csv"], "--report",
     "data.csv"),
]  # fmt: skip


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "taxonomy.toml").write_text(TAXONOMY, encoding="utf-8")
    (tmp_path / "data.csv").write_text(small_table(), encoding="utf-8")
    (tmp_path / "other.csv").write_text(small_table(), encoding="utf-8")
    (tmp_path / "numbers.csv").write_text(NUMERIC, encoding="utf-8")
    (tmp_path / "log.dat").write_text("1 2 3\n1 2\n2 3\n1 2 4\n" * 5, encoding="utf-8")
    (tmp_path / "rules.txt").write_text("1 => 2\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("alias", [False, True], ids=["same path", "symlink"])
@pytest.mark.parametrize(
    ("argv", "option", "source"), CASES, ids=[f"{' '.join(c[0][:2])} {c[1]}" for c in CASES]
)
def test_output_naming_the_input_is_refused_before_any_work(work, argv, option, source, alias):
    target = source
    if alias:
        target = f"alias-{source}"
        os.symlink(work / source, work / target)
    before = snapshot(work)
    done = run_cli(*argv, f"{option}={target}", "--quiet")
    assert done.code == 2, done.err
    assert len(done.err_lines) == 1, done.err
    assert "refusing to overwrite" in done.err_lines[-1]
    assert option in done.err_lines[-1]
    assert snapshot(work) == before
