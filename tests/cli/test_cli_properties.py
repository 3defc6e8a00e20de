"""Property: hostile command lines end as one line on stderr, exit 2, with nothing written.

Hypothesis builds command lines for every fedanon command from a valid base in which one to
three arguments are replaced by hostile values (wrong types, NaN, missing files, directories,
random bytes, the command's own input as its output, unwritable places). Every such command must
fail before doing work: exit code 2, exactly one line on stderr, no traceback, and the working
directory (names and bytes) unchanged. Commands run in-process through fedanon.cli.main.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedanon.cli import common
from fedanon.cli.main import build_parser
from tests.harness.cli import TAXONOMY, run_cli, small_table, snapshot

from .test_cli_output_safety import NUMERIC

# Hostile values by the kind of argument they replace; each is an error for that kind.
HOSTILE = {
    "table": ["missing.csv", "sub", "random.bin", "empty.csv", "", "taxonomy.toml", "n" * 300],
    "numbers": ["missing.csv", "sub", "random.bin", "empty.csv", "data.csv"],
    "taxonomy": ["missing.toml", "random.hchy", "empty.toml", "data.csv", "sub", "n" * 300],
    # {input}: the command's first input file; alias-{input}: a symlink to it.
    "out": [
        "n" * 300 + ".csv",  # longer than NAME_MAX
        "link-out.csv",  # a symlink (to a file that exists)
        "{input}",
        "alias-{input}",
        "sub",
        "dirlink",
        "{input}/out.csv",
        "/proc/out.csv",
        "/proc/new/out.csv",
        "",
    ],
    "out_dir": ["data.csv", "data.csv/deeper", "/proc/fedanon-out"],
    "int": ["abc", "2.5", "nan", "", "1e3", "0x10", "٣.٣"],
    "int_list": ["a,b", "2.5", "1,,x", "nan"],
    "C": ["nan", "inf", "-inf", "abc", "1/0", "0", "-1", "1.5", "", "101%", "1//2"],
    "config": ["missing.toml", "empty.toml", "sub", "random.bin"],
    "fimi": ["missing.dat", "sub", "random.bin", "data.csv", ""],
    "rules": ["missing.txt", "sub", "random.bin", "data.csv", ""],
    "cert_dir": ["/proc/fedanon-ca", "data.csv"],
}

# Every command with its arguments: (option, kind, valid value); kind None = never replaced.
COMMANDS: dict[str, tuple[list[str], list[tuple[str, str | None, str]]]] = {
    "anonymize lkc": (
        ["anonymize", "lkc", "--quiet", "--drop=pid"],
        [
            ("--data", "table", "data.csv"),
            ("--taxonomy", "taxonomy", "taxonomy.toml"),
            ("--L", "int", "2"),
            ("--k", "int", "4"),
            ("--C", "C", "0.5"),
            ("--out", "out", "release.csv"),
            ("--report", "out", "report.json"),
        ],
    ),
    "anonymize drbt": (
        ["anonymize", "drbt"],
        [
            ("--data", "numbers", "numbers.csv"),
            ("--n-components", "int", "2"),
            ("--seed", "int", "1"),
            ("--out", "out", "release.csv"),
            ("--report", "out", "report.json"),
        ],
    ),
    "anonymize alpha-k": (
        ["anonymize", "alpha-k", "--qid=age,job", "--sensitive-column=disease", "--quiet"],
        [
            ("--data", "table", "data.csv"),
            ("--alpha", "C", "0.5"),
            ("--k", "int", "2"),
            ("--out", "out", "release.csv"),
            ("--report", "out", "report.json"),
        ],
    ),
    "anonymize kactus": (
        ["anonymize", "kactus", "--class=outcome", "--qid=age,job", "--quiet"],
        [
            ("--data", "table", "data.csv"),
            ("--k", "int", "2"),
            ("--seed", "int", "1"),
            ("--out", "out", "release.csv"),
            ("--report", "out", "report.json"),
        ],
    ),
    "anonymize mondrian": (
        ["anonymize", "mondrian", "--class=outcome", "--qid=age,job", "--quiet"],
        [
            ("--data", "table", "data.csv"),
            ("--k", "int", "2"),
            ("--seed", "int", "1"),
            ("--out", "out", "release.csv"),
            ("--report", "out", "report.json"),
        ],
    ),
    "anonymize randomize": (
        ["anonymize", "randomize", "--qid=age,job", "--quiet"],
        [
            ("--data", "table", "data.csv"),
            ("--seed", "int", "1"),
            ("--out", "out", "release.csv"),
            ("--report", "out", "report.json"),
        ],
    ),
    "sanitize": (
        ["sanitize", "--algorithm=iga", "--quiet"],
        [
            ("--data", "fimi", "log.dat"),
            ("--rules", "rules", "rules.txt"),
            ("--seed", "int", "1"),
            ("--out", "out", "clean.dat"),
            ("--report", "out", "report.json"),
        ],
    ),
    "check alpha-k": (
        ["check", "alpha-k", "--qid=age,job", "--sensitive-column=disease"],
        [("--data", "table", "data.csv"), ("--alpha", "C", "0.5"), ("--k", "int", "1")],
    ),
    "check k-anonymity": (
        ["check", "k-anonymity", "--qid=age,job"],
        [("--data", "table", "data.csv"), ("--k", "int", "1")],
    ),
    "evaluate queries": (
        ["evaluate", "queries", "--qid=age,job", "--sensitive-column=disease", "--qd=1", "--quiet"],
        [
            ("--data", "table", "data.csv"),
            ("--release", "table", "data.csv"),
            ("--queries", "int", "5"),
            ("--report", "out", "q.json"),
            ("--chart", "out", "q.png"),
        ],
    ),
    "evaluate classification": (
        ["evaluate", "classification", "--class=outcome", "--method=kactus", "--quiet"],
        [
            ("--data", "table", "data.csv"),
            ("--k", "int_list", "2"),
            ("--seed", "int", "1"),
            ("--report", "out", "c.json"),
            ("--chart", "out", "c.png"),
        ],
    ),
    "evaluate randomization": (
        ["evaluate", "randomization", "--qid=age,job", "--no-rules", "--quiet"],
        [
            ("--data", "table", "data.csv"),
            ("--seed", "int", "1"),
            ("--top", "int", "3"),
            ("--report", "out", "r.json"),
        ],
    ),
    "evaluate sanitize": (
        ["evaluate", "sanitize", "--support=0.3", "--algorithms=iga", "--psi=0", "--quiet"],
        [
            ("--data", "fimi", "log.dat"),
            ("--rules", "rules", "rules.txt"),
            ("--seed", "int", "1"),
            ("--report", "out", "s.json"),
            ("--chart", "out", "s.png"),
        ],
    ),
    "sim randomize": (
        ["sim", "randomize", "--qid=age,job", "--quiet"],
        [
            ("--data", "table", "data.csv"),
            ("--parties", "int", "3"),
            ("--seed", "int", "1"),
            ("--out", "out", "release.csv"),
            ("--report", "out", "report.json"),
            ("--workdir", "out_dir", "wd"),
        ],
    ),
    "check l-diversity": (
        ["check", "l-diversity", "--qid=age,job", "--sensitive-column=disease"],
        [("--data", "table", "data.csv"), ("--l", None, "2")],
    ),
    "check t-closeness": (
        ["check", "t-closeness", "--qid=age,job", "--sensitive-column=disease"],
        [("--data", "table", "data.csv"), ("--t", None, "0.5")],
    ),
    "taxonomy init": (
        ["taxonomy", "init", "--qid=age,job", "--numeric=age=width:20"],
        [("--data", "table", "data.csv"), ("--out", "out", "generated.toml")],
    ),
    "check lkc": (
        ["check", "lkc", "--qid=age,job"],
        [
            ("--data", "table", "data.csv"),
            ("--L", "int", "2"),
            ("--k", "int", "1"),
            ("--C", "C", "1"),
        ],
    ),
    "evaluate lkc": (
        ["evaluate", "lkc"],
        [
            ("--data", "table", "data.csv"),
            ("--release", "table", "data.csv"),
            ("--taxonomy", "taxonomy", "taxonomy.toml"),
            ("--train-rows", "int", "20"),
            ("--report", "out", "utility.json"),
        ],
    ),
    "evaluate lkc-sweep": (
        ["evaluate", "lkc-sweep", "--quiet"],
        [
            ("--data", "table", "data.csv"),
            ("--taxonomy", "taxonomy", "taxonomy.toml"),
            ("--train-rows", "int", "20"),
            ("--L", "int_list", "2"),
            ("--k", "int_list", "4"),
            ("--C", "C", "0.5"),
            ("--out-dir", "out_dir", "sweep"),
        ],
    ),
    "evaluate drbt": (
        ["evaluate", "drbt", "--quiet"],
        [
            ("--data", "numbers", "numbers.csv"),
            ("--n-components", "int", "2"),
            ("--clusters", "int_list", "2"),
            ("--trials", "int", "1"),
            ("--report", "out", "report.json"),
            ("--chart", "out", "chart.png"),
        ],
    ),
    "certs init": (["certs", "init"], [("--dir", "cert_dir", "/proc/fedanon-ca")]),
    "certs issue": (["certs", "issue", "hospital-1"], [("--dir", "cert_dir", "sub")]),
    "party serve": (["party", "serve"], [("--config", "config", "missing.toml")]),
    "party status": (["party", "status"], [("--config", "config", "missing.toml")]),
    "leader run": (["leader", "run"], [("--config", "config", "missing.toml")]),
    "sim lkc": (
        ["sim", "lkc", "--quiet", "--drop=pid"],
        [
            ("--data", "table", "data.csv"),
            ("--taxonomy", "taxonomy", "taxonomy.toml"),
            ("--parties", "int", "3"),
            ("--L", "int", "2"),
            ("--k", "int", "4"),
            ("--C", "C", "0.5"),
            ("--out", "out", "release.csv"),
        ],
    ),
    "sim c45": (
        ["sim", "c45", "--quiet"],
        [
            ("--data", "table", "data.csv"),
            ("--class", None, "outcome"),
            ("--parties", "int", "3"),
            ("--min-leaf", "int", "2"),
            ("--out", "out", "tree.txt"),
        ],
    ),
    "sim kactus": (
        ["sim", "kactus", "--quiet"],
        [
            ("--data", "table", "data.csv"),
            ("--qid", None, "age,job"),
            ("--class", None, "outcome"),
            ("--k", "int", "4"),
            ("--parties", "int", "3"),
            ("--out", "out", "release.csv"),
        ],
    ),
    "sim drbt": (
        ["sim", "drbt"],
        [
            ("--data", "numbers", "numbers.csv"),
            ("--clusters", "int", "2"),
            ("--out", "out", "release.csv"),
            ("--report", "out", "report.json"),
            ("--workdir", "out_dir", "wd"),
        ],
    ),
    "sim evaluate": (
        ["sim", "evaluate", "--quiet"],
        [
            ("--data", "table", "data.csv"),
            ("--release", "table", "data.csv"),
            ("--taxonomy", "taxonomy", "taxonomy.toml"),
            ("--parties", "int", "3"),
            ("--report", "out", "utility.json"),
        ],
    ),
    "demo": (
        ["demo", "--quiet"],
        [
            ("--rows", "int", "300"),
            ("--C", "int", "0.25"),
            ("--out-dir", "out_dir", "demo"),
            ("--families", None, "lkc"),
        ],
    ),
}
# Arguments that are only ever hostile (the command would otherwise run for real).
ALWAYS_HOSTILE = {"certs init", "certs issue", "party serve", "party status", "leader run"}


@st.composite
def hostile_command(draw) -> list[str]:
    name = draw(st.sampled_from(sorted(COMMANDS)))
    head, slots = COMMANDS[name]
    replaceable = [i for i, (_, kind, _) in enumerate(slots) if kind]
    if name in ALWAYS_HOSTILE:
        chosen = set(replaceable)
    else:
        chosen = set(draw(st.lists(st.sampled_from(replaceable), min_size=1, max_size=3)))
    first_input = next(
        (v for _, kind, v in slots if kind in ("table", "numbers", "fimi")), "data.csv"
    )
    options = []
    for i, (option, kind, valid) in enumerate(slots):
        value = draw(st.sampled_from(HOSTILE[kind])) if kind and i in chosen else valid
        options.append(f"{option}={value.format(input=first_input)}")
    return [*head, *draw(st.permutations(options))]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    (root / "taxonomy.toml").write_text(TAXONOMY, encoding="utf-8")
    (root / "data.csv").write_text(small_table(), encoding="utf-8")
    (root / "numbers.csv").write_text(NUMERIC, encoding="utf-8")
    (root / "log.dat").write_text("1 2 3\n1 2\n2 3\n1 2 4\n" * 5, encoding="utf-8")
    (root / "rules.txt").write_text("1 => 2\n", encoding="utf-8")
    (root / "random.bin").write_bytes(os.urandom(512))
    (root / "random.hchy").write_bytes(bytes(range(128, 256)) * 4)
    (root / "empty.csv").write_bytes(b"")
    (root / "empty.toml").write_bytes(b"")
    (root / "sub").mkdir()
    os.symlink(root / "data.csv", root / "alias-data.csv")
    os.symlink(root / "numbers.csv", root / "alias-numbers.csv")
    os.symlink(root / "log.dat", root / "alias-log.dat")
    os.symlink(root / "sub", root / "dirlink")
    (root / "elsewhere.csv").write_text("kept\n", encoding="utf-8")
    os.symlink(root / "elsewhere.csv", root / "link-out.csv")
    return root


# Every example runs a whole command: the quick subset runs a share of each property's examples,
# the full suite the rest (the same total as one 250-example run).
def examples(quick: int, full: int) -> pytest.MarkDecorator:
    """Parametrize a property test by its example budget: `quick` fast, `full` marked slow."""
    return pytest.mark.parametrize(
        "budget",
        [pytest.param(quick, id="quick"), pytest.param(full, marks=pytest.mark.slow, id="full")],
    )


def _property(budget: int) -> settings:
    too_slow = [HealthCheck.too_slow]
    return settings(max_examples=budget, deadline=None, suppress_health_check=too_slow)


@examples(quick=50, full=200)
def test_hostile_command_line_is_one_line_exit_2_and_writes_nothing(work, budget):
    @_property(budget)
    @given(args=hostile_command())
    def check(args):
        before = snapshot(work)
        cwd = os.getcwd()
        os.chdir(work)
        try:
            done = run_cli(*args)
        finally:
            os.chdir(cwd)
        assert "Traceback" not in done.err, done.err
        assert done.code == 2, (args, done.code, done.err)
        assert len(done.err_lines) == 1, (args, done.err)
        assert snapshot(work) == before, args

    check()


def _leaf_commands(parser: argparse.ArgumentParser, prefix: str = "") -> list[str]:
    """Every runnable command of `parser`, e.g. 'anonymize lkc', 'demo'."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        return [prefix.strip()]
    return [
        name
        for group in groups
        for word, sub in group.choices.items()
        for name in _leaf_commands(sub, f"{prefix} {word}")
    ]


def test_the_property_covers_every_command():
    """A new command must join the table above (with a hostile value for one of its arguments)."""
    assert sorted(_leaf_commands(build_parser())) == sorted(COMMANDS)
    for _head, slots in COMMANDS.values():
        assert any(kind for _, kind, _ in slots)


# -- every option of every command, derived from the parser ---------------------------------------
# Hostile values by the argparse type that checks them; each must be a usage error (exit 2, one
# line) before any work, so the command is run with that one option alone.
TYPED_HOSTILE: dict[object, list[str]] = {
    common.names: ["", " ", ",,", "a,,b", "a,", "a,a", "a, a"],
    common.ints: ["", ",,", "1,,2", "1,1", "a", "1.5", "nan"],
    common.numbers: ["", ",,", "0.1,,0.2", "0.1,0.1", "x", "nan", "inf"],
    common.per_item_numbers: ["", " ", ",,", "0.1,", "x", "nan", "-inf"],
    common.support: ["0", "-1", "nan", "inf", "1.5", "x", "", "0.0"],
    common.fraction: ["-0.1", "nan", "1.5", "x", ""],
    common.positive_int: ["0", "-1", "x", "1.5", "", "nan"],
    int: ["", "x", "1.5", "nan", "1e3", "٣x"],
    float: ["", "x", "1/2"],
}
CHOICE_HOSTILE = ["not-a-choice", "", " "]
# Options whose text the command itself checks (paths, numbers with units, C as 'all' or a
# fraction...); the table COMMANDS above runs them with hostile values. A new option must be
# given an argparse type (and join TYPED_HOSTILE) or be listed here.
CHECKED_BY_THE_COMMAND = {
    *("--data", "--release", "--rules", "--taxonomy", "--config"),
    *("--out", "--report", "--chart", "--html", "--nss", "--ss", "--id-map"),
    *("--out-dir", "--workdir", "--dir", "--address", "--name", "--marker"),
    *("--C", "--k", "--L", "--alpha", "--p", "--suppress", "--split"),
    *("--sensitive-values", "--sensitive-column"),
    *("--class", "--id", "--order", "--delimiter", "--out-delimiter"),
    *("--numeric", "--date", "--groups"),  # taxonomy init: COL=SPEC, checked per column
    "--wait",  # party status: optional seconds (tests/distributed/test_party_status_wait.py)
}


def _leaf_parsers(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        return [(words, parser)]
    return [
        leaf
        for group in groups
        for word, sub in group.choices.items()
        for leaf in _leaf_parsers(sub, (*words, word))
    ]


def _valued_options() -> list[tuple[tuple[str, ...], argparse.Action]]:
    return [
        (words, action)
        for words, parser in _leaf_parsers(build_parser())
        for action in parser._actions
        if action.option_strings and action.nargs != 0
    ]


def _typed_cases() -> list[tuple[tuple[str, ...], str, str]]:
    cases = []
    for words, action in _valued_options():
        if action.choices is not None:
            values = CHOICE_HOSTILE
        else:
            values = TYPED_HOSTILE.get(action.type, [])
        cases += [(words, action.option_strings[-1], value) for value in values]
    return cases


TYPED_CASES = _typed_cases()


@examples(quick=50, full=150)
def test_every_typed_option_refuses_hostile_values_with_one_line(tmp_path, budget):
    @_property(budget)
    @given(case=st.sampled_from(TYPED_CASES))
    def check(case):
        words, option, value = case
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            before = snapshot(tmp_path)
            done = run_cli(*words, f"{option}={value}")
            after = snapshot(tmp_path)
        finally:
            os.chdir(cwd)
        assert "Traceback" not in done.err, done.err
        assert done.code == 2, (case, done.code, done.err)
        assert len(done.err_lines) == 1, (case, done.err)
        assert option in done.err, (case, done.err)
        assert after == before, case

    check()


def test_every_option_of_every_command_is_checked_somewhere():
    """Each option with a value has a checking argparse type, choices, or is in the list of
    options its command checks (and the hostile table above exercises)."""
    unchecked = sorted(
        {
            f"{' '.join(words)} {action.option_strings[-1]}"
            for words, action in _valued_options()
            if action.choices is None
            and action.type not in TYPED_HOSTILE
            and action.option_strings[-1] not in CHECKED_BY_THE_COMMAND
        }
    )
    assert unchecked == []


def test_every_comma_list_option_has_a_list_type():
    """An option documented as a comma-separated list parses through a checking list type,
    so a blank item, ``,,`` or a repeated name can never be skipped silently."""
    list_types = {common.names, common.ints, common.numbers, common.per_item_numbers}
    loose = sorted(
        f"{' '.join(words)} {action.option_strings[-1]}"
        for words, action in _valued_options()
        if any(mark in (action.help or "") for mark in ("a,b", "comma", ",.."))
        and action.type not in list_types
        and action.option_strings[-1] not in {"--p", "--sensitive-values", "--order"}
    )
    assert loose == []
