"""`fedanon sanitize` and `fedanon evaluate sanitize` through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedanon.utility.transactions import Transactions
from tests.harness.cli import run_cli

# Figure 5.2(a) with A..D = 1..4, plus filler baskets so that rules have room to be mined.
LOG = "1 2 3 4\n1 2 3\n1 2 4\n1 3 4\n1 2 3\n2 4\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "log.dat"
    data.write_text(LOG)
    rules = tmp_path / "rules.txt"
    rules.write_text("1,2 => 4\n1,3 => 4\n")
    return {"data": data, "rules": rules, "out": tmp_path / "out" / "clean.dat"}


def sanitize_args(files: dict[str, Path], *extra: str) -> list[str]:
    return [
        "sanitize", "--data", str(files["data"]), "--rules", str(files["rules"]),
        "--out", str(files["out"]), *extra,
    ]  # fmt: skip


def test_iga_writes_the_sanitized_log_and_report(files, tmp_path):
    report = tmp_path / "report.json"
    done = run_cli(*sanitize_args(files, "--algorithm", "iga", "--report", str(report), "--json"))
    assert done.code == 0, done.err
    out = Transactions.read_fimi(files["out"])
    # IGA at psi = 0: D is the shared lowest-support victim of T1, T3, T4 (Figure 5.6 logic).
    assert out.to_lists() == [[1, 2, 3], [1, 2, 3], [1, 2], [1, 3], [1, 2, 3], [2, 4]]
    saved = json.loads(report.read_text())
    assert saved["deletions"] == 3 and saved["transactions"] == 6
    assert json.loads(done.out)["algorithm"] == "iga"


def test_swa_accepts_one_psi_per_rule(files):
    done = run_cli(*sanitize_args(files, "--algorithm", "swa", "--psi", "0,1", "--seed", "3"))
    assert done.code == 0, done.err
    out = Transactions.read_fimi(files["out"])
    # Rule 2 (psi 1) keeps its transactions unless rule 1's deletion broke it.
    assert len(out) == 6 and len(out.containing([1, 2, 4])) == 0


def test_dsa_writes_itemsets_with_supports(files):
    done = run_cli(*sanitize_args(files, "--algorithm", "dsa", "--support", "0.3", "--seed", "1"))
    assert done.code == 0, done.err
    lines = files["out"].read_text().splitlines()
    itemsets = {frozenset(map(int, line.split(" (")[0].split())) for line in lines}
    assert frozenset({1, 2, 4}) not in itemsets and frozenset({1, 3, 4}) not in itemsets
    assert "1 (5)" in lines  # singletons keep their original support


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rules": "1,9 => 4\n"}, "item(s) 9 never occur"),
        ({"rules": "\n# none\n"}, "no sensitive rule"),
        ({"rules": "1,2 => 4\n1 2\n"}, "line 2"),
        ({"data": "1 2\n3 four\n"}, "line 2: 'four'"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(files, change, message):
    for key, text in change.items():
        files[key].write_text(text)
    done = run_cli(*sanitize_args(files, "--algorithm", "rra"))
    assert done.code == 2, done.err
    err = done.err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not files["out"].exists()
    assert not files["out"].parent.exists() or not any(files["out"].parent.iterdir())


@pytest.mark.parametrize("psi", ["1.5", "-0.1", "x"])
def test_psi_outside_unit_interval_is_rejected(files, psi):
    done = run_cli(*sanitize_args(files, "--algorithm", "ra", "--psi", psi))  # argparse or handler
    assert done.code == 2, done.err
    assert len(done.err_lines) == 1 and "--psi" in done.err
    assert not files["out"].exists()


def test_evaluate_one_sanitized_log(files, tmp_path):
    done = run_cli(*sanitize_args(files, "--algorithm", "iga"))
    assert done.code == 0, done.err
    done = run_cli(
        "evaluate", "sanitize", "--data", files["data"], "--release", files["out"],
        "--rules", files["rules"], "--support", "0.3", "--confidence", "0.6", "--json",
    )  # fmt: skip
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["hf"] == 0.0
    assert report["dif"] == pytest.approx(3 / 18)
    assert 0.0 <= report["mc"] <= 1.0 and report["ap"] is not None


def test_evaluate_sweep_writes_json_and_png(files, tmp_path):
    chart, report = tmp_path / "psi.png", tmp_path / "sweep.json"
    done = run_cli(
        "evaluate", "sanitize", "--data", files["data"], "--rules", files["rules"],
        "--support", "0.3", "--algorithms", "iga,swa", "--psi", "0,0.5",
        "--seed", "1", "--chart", chart, "--report", report, "--quiet",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sweep = json.loads(report.read_text())["sweep"]
    assert [(row["algorithm"], row["psi"]) for row in sweep] == [
        ("iga", 0.0), ("iga", 0.5), ("swa", 0.0), ("swa", 0.5),
    ]  # fmt: skip
    assert sweep[0]["hf"] == 0.0
