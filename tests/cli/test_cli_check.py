"""`fedanon check lkc` end to end: exit codes, outputs, one-line input errors."""

from __future__ import annotations

import argparse
import json
import types
from pathlib import Path

import pytest

from fedanon.cli.check import register
from fedanon.errors import FedanonError
from tests.harness.cli import CliResult, run_cli_process

# 8 rows that pass (L=2, K=2, C=1/2) with S={s=x}, every group exactly on the boundary.
PASSING = "a,b,c,s\n0,0,0,x\n0,0,0,y\n0,1,1,x\n0,1,1,y\n1,0,0,x\n1,0,0,y\n1,1,1,x\n1,1,1,y\n"
# The same plus one row whose (b, c) = (0, 1) is unique: a K violation on one pair only.
K_BROKEN = PASSING + "0,0,1,y\n"


def run(*args: str) -> CliResult:
    return run_cli_process("check", "lkc", *args)


@pytest.fixture
def csv(tmp_path: Path):
    def write(text: str, name: str = "release.csv") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


def lkc_args(data: str, *extra: str) -> list[str]:
    requirement = [
        "--qid",
        "a,b,c",
        "--sensitive-values",
        "s=x",
        "--L",
        "2",
        "--k",
        "2",
        "--C",
        "0.5",
    ]
    return ["--data", data, *requirement, *extra]


def test_passing_release_exits_0(csv) -> None:
    p = run(*lkc_args(csv(PASSING)))
    assert p.code == 0, p.err
    assert "LKC-privacy holds" in p.out
    assert "min group size: 2" in p.out
    assert "max confidence of s=x: 1/2" in p.out


def test_violation_exits_1_and_names_the_worst_group(csv) -> None:
    p = run(*lkc_args(csv(K_BROKEN)))
    assert p.code == 1
    assert "VIOLATED" in p.out
    assert "group size 1 < K=2" in p.out
    assert "data row 9" in p.out
    assert p.err == ""


def test_json_output(csv) -> None:
    p = run(*lkc_args(csv(K_BROKEN), "--json"))
    assert p.code == 1
    data = json.loads(p.out)
    assert data["ok"] is False
    assert data["qids"] == ["a", "b", "c"]
    assert data["worst"]["bound"] == "K"
    assert data["worst"]["qids"] == ["b", "c"]
    assert data["worst"]["values"] == ["0", "1"]
    assert data["worst"]["first_row"] == 8
    assert data["subsets_checked"] == 6


def test_confidence_violation_json(csv) -> None:
    text = PASSING.replace("1,1,1,y", "1,1,1,x")
    data = json.loads(run(*lkc_args(csv(text), "--json")).out)
    assert data["worst"]["bound"] == "C"
    assert data["worst"]["qids"] == ["a", "b"]
    assert data["worst"]["confidence"]["fraction"] == "1/1"


def test_k_anonymity_special_case_with_l_all(csv) -> None:
    # Full-QID groups have 2 rows: 2-anonymous, not 3-anonymous.
    path = csv(PASSING)
    assert run("--data", path, "--qid", "a,b,c", "--L", "all", "--k", "2").code == 0
    p = run("--data", path, "--qid", "a,b,c", "--L", "all", "--k", "3", "--json")
    assert p.code == 1
    assert json.loads(p.out)["subsets_checked"] == 7


def test_delimiters(csv) -> None:
    path = csv(PASSING.replace(",", "\t"), "release.tsv")
    assert run(*lkc_args(path, "--delimiter", "\\t")).code == 0
    path = csv(PASSING.replace(",", ";"), "release.ssv")
    assert run(*lkc_args(path, "--delimiter", ";")).code == 0


def test_first_flag_stops_early(csv) -> None:
    data = json.loads(run(*lkc_args(csv(K_BROKEN), "--first", "--json")).out)
    assert data["ok"] is False and data["stopped_early"] is True
    assert data["subsets_checked"] < 6


def test_help_names_the_special_cases() -> None:
    p = run("--help")
    assert p.code == 0
    assert "k-anonymity" in p.out and "confidence bounding" in p.out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"--L": "0"}, "L must be an integer >= 1"),
        ({"--L": "two"}, "L must be an integer >= 1"),
        ({"--k": "-3"}, "K must be an integer >= 1"),
        ({"--C": "1.5"}, "C must be in (0, 1]"),
        ({"--C": "0"}, "C must be in (0, 1]"),
        ({"--C": "lots"}, "C must be a number"),
        ({"--qid": "a,zz"}, "column not in the table: zz"),
        ({"--sensitive-values": "diagnosis=x"}, "column not in the table: diagnosis"),
        ({"--sensitive-values": "s"}, "--sensitive-values must look like COL=v1,v2"),
        ({"--delimiter": "::"}, "--delimiter must be one character"),
        ({"--data": "/nonexistent/release.csv"}, "data file not found"),
    ],
)
def test_input_errors_exit_2_with_one_line(csv, change: dict[str, str], message: str) -> None:
    args = lkc_args(csv(PASSING))
    for option, value in change.items():
        if option in args:
            args[args.index(option) + 1] = value
        else:
            args += [option, value]
    p = run(*args)
    assert p.code == 2
    assert p.out == ""
    assert p.err.count("\n") == 1 and "Traceback" not in p.err
    assert p.err.startswith("fedanon: error: ") and message in p.err


@pytest.mark.parametrize(
    ("text", "message"), [("a,b,c,s\n", "no rows"), ("", "data file is empty")]
)
def test_empty_tables_exit_2(csv, text: str, message: str) -> None:
    p = run(*lkc_args(csv(text)))
    assert p.code == 2
    assert p.err.count("\n") == 1 and message in p.err


def test_missing_qids_exit_2(csv) -> None:
    p = run("--data", csv(PASSING), "--L", "2", "--k", "2")
    assert p.code == 2 and "no QID columns" in p.err


def test_absent_sensitive_value_warns(csv) -> None:
    p = run(*lkc_args(csv(PASSING)), "--sensitive-values", "s=X")
    assert p.code == 0
    assert "warning: sensitive value s=X never occurs" in p.err


def test_values_are_printed_literally(csv) -> None:
    # A generalized value that looks like rich markup must not be styled away.
    text = "a,s\n[bold]x,y\n[bold]x,y\n"
    p = run("--data", csv(text), "--qid", "a", "--L", "1", "--k", "3")
    assert p.code == 1
    assert "[bold]x" in p.out


# ------------------------------------------------------------------ --taxonomy (in process)


class FakeTaxonomyFile:
    """What `load_taxonomy` returns, reduced to the two attributes the checker may use."""

    def __init__(self, qids: list[str] | None, sensitive: list[tuple[str, str]] | None) -> None:
        self.qids = qids
        self.sensitive = (
            None
            if sensitive is None
            else [types.SimpleNamespace(column=c, value=v) for c, v in sensitive]
        )


def run_in_process(monkeypatch, taxonomy: FakeTaxonomyFile, argv: list[str]) -> int:
    """Run only the `check` command with `load_taxonomy` replaced by a stub returning `taxonomy`.

    Only `check.register` is used (not the whole `fedanon` parser) so that the test does not
    depend on the other commands' modules.
    """
    import fedanon.taxonomy.loader as loader

    monkeypatch.setattr(loader, "load_taxonomy", lambda path, **_: taxonomy)
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["check", "lkc", *argv])
    return args.handler(args)


def test_taxonomy_supplies_qids_and_sensitive(csv, monkeypatch, capsys) -> None:
    taxonomy = FakeTaxonomyFile(["a", "b", "c"], [("s", "x")])
    path = csv(PASSING.replace("1,1,1,y", "1,1,1,x"))
    argv = ["--data", path, "--taxonomy", "t.hchy", "--L", "2", "--k", "2", "--C", "0.5"]
    assert run_in_process(monkeypatch, taxonomy, [*argv, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["qids"] == ["a", "b", "c"]
    assert data["worst"]["sensitive"] == {"column": "s", "value": "x"}
    # Explicit options win over the file: with S={s=y} the release passes.
    assert run_in_process(monkeypatch, taxonomy, [*argv, "--sensitive-values", "s=y"]) == 0


def test_taxonomy_without_qids_needs_qid_option(csv, monkeypatch) -> None:
    taxonomy = FakeTaxonomyFile(None, None)  # e.g. ARX hierarchies name no QIDs
    argv = ["--data", csv(PASSING), "--taxonomy", "h.csv", "--L", "2", "--k", "2"]
    with pytest.raises(FedanonError, match="no QID columns"):
        run_in_process(monkeypatch, taxonomy, argv)
    assert run_in_process(monkeypatch, taxonomy, [*argv, "--qid", "a,b,c"]) == 0
