"""One vocabulary across commands: help on every option, the shared option names, the exit-code
table, and the old spellings accepted with a notice."""

from __future__ import annotations

import argparse
import io
import re
from pathlib import Path

import pytest

from fedanon.cli.deprecated import RENAMED, rewrite_deprecated
from fedanon.cli.main import build_parser
from fedanon.cli.parser import EXIT_CODES
from tests.harness.cli import run_cli


def _leaves(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(command words, parser) of every runnable command."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield words, parser
    for group in groups:
        for word, sub in group.choices.items():
            yield from _leaves(sub, (*words, word))


LEAVES = dict(_leaves(build_parser()))


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


@pytest.mark.parametrize("words", sorted(LEAVES), ids=" ".join)
def test_every_option_has_help_text(words):
    missing = [
        a.option_strings or a.dest
        for a in LEAVES[words]._actions
        if not isinstance(a, argparse._HelpAction) and not (a.help or "").strip()
    ]
    assert not missing


def test_a_default_is_shown_in_help():
    text = LEAVES[("evaluate", "drbt")].format_help()
    assert "releases per F-measure (default: 10)" in " ".join(text.split())


# Where a shared option has nothing to act on (docs/cli.md says why): no CSV table to read,
# nothing to report as JSON, no progress to hide.
NO_TABLE = {
    ("certs", "init"),
    ("certs", "issue"),
    ("party", "serve"),
    ("party", "status"),
    ("leader", "run"),
    ("demo",),
    ("sanitize",),
    ("evaluate", "sanitize"),
}
NO_JSON = {("certs", "init"), ("certs", "issue"), ("party", "serve")}
NO_QUIET = {
    ("certs", "init"),
    ("certs", "issue"),
    ("party", "serve"),
    ("party", "status"),
    ("check", "lkc"),
    ("check", "k-anonymity"),
    ("check", "alpha-k"),
    ("check", "l-diversity"),
    ("check", "t-closeness"),
    ("taxonomy", "init"),
}


@pytest.mark.parametrize("words", sorted(LEAVES), ids=" ".join)
def test_shared_options_are_on_every_command_where_they_make_sense(words):
    options = _options(LEAVES[words])
    if words not in NO_TABLE:
        assert {"--data", "--delimiter"} <= options
    if words not in NO_JSON:
        assert "--json" in options
    if words not in NO_QUIET:
        assert "--quiet" in options
    # The old spellings are gone from the parsers (they live on as rewritten aliases only).
    for old in ("--raw", "--original", "--sanitized"):
        assert old not in options
    if "--out" in options:
        assert LEAVES[words]._option_string_actions["--out"].help != "JSON report path"


def test_exit_codes_are_one_table_in_help():
    text = build_parser().format_help()
    codes = [code for code, _ in EXIT_CODES]
    assert codes == sorted(set(codes))
    for code, meaning in EXIT_CODES:
        assert f"{code:<4} {meaning}" in text


def test_every_error_class_exit_code_is_in_the_table():
    from fedanon.errors import FedanonError, InfeasibleError
    from fedanon.leader.federation import PartyFailure

    table = dict(EXIT_CODES)
    assert FedanonError.exit_code == 2 and "input error" in table[2]
    assert InfeasibleError.exit_code == 3 and "infeasible" in table[3]
    assert PartyFailure.exit_code == 4 and "party" in table[4]


def test_renamed_options_map_onto_existing_options():
    for words, renames in RENAMED.items():
        options = _options(LEAVES[words])
        for old, new in renames.items():
            assert new in options and old not in options, (words, old)


def test_an_old_spelling_still_works_with_a_one_line_notice(tmp_path, monkeypatch):
    """`evaluate queries --out` (now --report) writes the report and says so on stderr."""
    monkeypatch.chdir(tmp_path)
    rows = "".join(f"{i % 3},{i % 2},{'x' if i % 4 else 'y'}\n" for i in range(40))
    (tmp_path / "raw.csv").write_text("a,b,s\n" + rows, encoding="utf-8")
    done = run_cli(
        "evaluate", "queries", "--data", "raw.csv", "--qid", "a,b", "--sensitive-column", "s",
        "--release", "raw.csv", "--qd", "1", "--queries", "5", "--out=old.json", "--quiet",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert (tmp_path / "old.json").is_file()
    notices = [line for line in done.err_lines if "deprecated" in line]
    assert notices == ["fedanon: note: --out is deprecated here, use --report (it will be removed)"]


def test_an_old_spelling_of_another_command_is_not_rewritten():
    """`--out` stays the output table of `anonymize lkc`: no notice, no rewrite."""
    done = run_cli("anonymize", "lkc", "--out", "x.csv")
    assert "deprecated" not in done.err
    assert done.code == 2


def test_docs_cli_lists_every_command_and_option():
    """docs/cli.md is the reference: a command or an option missing there is a doc bug."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    sections = text.split("\n### `fedanon ")
    documented = {s.split("`", 1)[0]: s for s in sections[1:]}
    assert set(documented) == {" ".join(words) for words in LEAVES}
    for words, parser in LEAVES.items():
        section = documented[" ".join(words)]
        for option in _options(parser) - {"-h", "--help"}:
            assert f"`{option}" in section or f", {option}" in section, (words, option)


# One spelling per concept (docs/cli.md, "One vocabulary"): the option every command uses.
CONCEPTS = {
    "minimum group size": "--k",
    "sensitive values (LKC's S)": "--sensitive-values",
    "one sensitive column": "--sensitive-column",
    "kept dimensions of a projection": "--n-components",
    "QID columns": "--qid",
    "class column": "--class",
}
#: Spellings of those concepts that no parser may offer (old ones live on in RENAMED only).
SYNONYMS = {
    *("--K", "--sensitive", "--k-dims", "--dims", "--kdims", "--qids", "--quasi-identifiers"),
    *("--class-column", "--target", "--label", "--components", "--n-dims"),
}


def _concept(help_text: str) -> str | None:
    """The concept an option's help names (by its words, not by its spelling)."""
    words = " ".join(help_text.lower().split())
    if "minimum group size" in words or "minimum class size" in words:
        return "minimum group size"
    if words.startswith("sensitive values"):
        return "sensitive values (LKC's S)"
    if "sensitive column" in words:
        return "one sensitive column"
    if words.startswith("dimensions kept") or words.startswith("kept dimensions per party"):
        return "kept dimensions of a projection"
    if words.startswith("class column"):
        return "class column"
    if re.match(r"(comma-separated )?qid columns|qids a,b", words):
        return "QID columns"
    return None


@pytest.mark.parametrize("words", sorted(LEAVES), ids=" ".join)
def test_a_concept_has_one_option_name_in_every_family(words):
    """A family naming a concept with another word fails here (the help says what it means)."""
    parser = LEAVES[words]
    assert not _options(parser) & SYNONYMS
    for action in parser._actions:
        concept = _concept(action.help or "")
        if concept and action.option_strings:
            assert CONCEPTS[concept] in action.option_strings, (words, action.option_strings)


def test_every_concept_is_spelled_the_same_in_each_family_that_has_it():
    """The families that take a group size, a sensitive column, ... all found by their help."""
    seen: dict[str, set[tuple[str, ...]]] = {}
    for words, parser in LEAVES.items():
        for action in parser._actions:
            concept = _concept(action.help or "") if action.option_strings else None
            if concept is not None:
                seen.setdefault(concept, set()).add(words)
    assert {("anonymize", "lkc"), ("anonymize", "kactus"), ("anonymize", "alpha-k")} <= seen[
        "minimum group size"
    ]
    assert {("check", "lkc"), ("check", "alpha-k"), ("check", "k-anonymity")} <= seen[
        "minimum group size"
    ]
    assert {("anonymize", "lkc"), ("check", "lkc"), ("sim", "lkc")} == seen[
        "sensitive values (LKC's S)"
    ]
    assert {
        ("anonymize", "alpha-k"),
        ("check", "alpha-k"),
        ("check", "l-diversity"),
        ("check", "t-closeness"),
        ("evaluate", "queries"),
        ("evaluate", "randomization"),
    } == seen["one sensitive column"]
    assert {("anonymize", "drbt"), ("evaluate", "drbt"), ("sim", "drbt")} == seen[
        "kept dimensions of a projection"
    ]


@pytest.mark.parametrize(
    ("words", "old", "new"),
    [
        (words, old, new)
        for words, renames in sorted(RENAMED.items())
        for old, new in renames.items()
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else v,
)
def test_every_old_spelling_is_rewritten_with_one_notice_naming_the_new(words, old, new):
    """Given twice, spelled ``--old value`` and ``--old=value``: two rewrites, one notice."""
    notices = io.StringIO()
    argv = [*words, "--quiet", old, "v1", f"{old}=v2"]
    assert rewrite_deprecated(argv, notices) == [*words, "--quiet", new, "v1", f"{new}=v2"]
    assert notices.getvalue().splitlines() == [
        f"fedanon: note: {old} is deprecated here, use {new} (it will be removed)"
    ]
    assert new in _options(LEAVES[words]) and old not in _options(LEAVES[words])


def test_a_command_without_subcommands_is_found_after_an_option_value():
    """`demo --parties 4 --K 5`: the second bare word is a value, not a subcommand."""
    notices = io.StringIO()
    argv = ["demo", "--parties", "4", "--K", "5"]
    assert rewrite_deprecated(argv, notices) == ["demo", "--parties", "4", "--k", "5"]
    assert "--K is deprecated here, use --k" in notices.getvalue()


def test_the_same_old_word_means_the_family_s_own_new_option():
    """``--sensitive`` is values in LKC and a column elsewhere: each becomes its own."""
    lkc = rewrite_deprecated(["check", "lkc", "--sensitive", "s=x"], io.StringIO())
    alpha = rewrite_deprecated(["check", "alpha-k", "--sensitive", "s"], io.StringIO())
    assert lkc == ["check", "lkc", "--sensitive-values", "s=x"]
    assert alpha == ["check", "alpha-k", "--sensitive-column", "s"]


def _table(tmp_path: Path) -> str:
    rows = "".join(f"{i % 3},{i % 2},{'x' if i % 4 else 'y'},{i},{i * 7 % 5}\n" for i in range(40))
    (tmp_path / "t.csv").write_text("a,b,s,n,m\n" + rows, encoding="utf-8")
    return str(tmp_path / "t.csv")


# One command per family whose options were renamed: new argv, and the old spelling of it.
OLD_AND_NEW = {
    "check lkc": (
        ["check", "lkc", "--qid", "a,b", "--L", "2", "--C", "1/2"],
        ["--k", "4", "--sensitive-values", "s=y"],
        ["--K", "4", "--sensitive", "s=y"],
    ),
    "check alpha-k": (
        ["check", "alpha-k", "--qid", "a,b", "--alpha", "0.9", "--k", "3"],
        ["--sensitive-column", "s"],
        ["--sensitive", "s"],
    ),
    "check l-diversity": (
        ["check", "l-diversity", "--qid", "a", "--l", "2"],
        ["--sensitive-column", "s"],
        ["--sensitive", "s"],
    ),
    "anonymize drbt": (
        ["anonymize", "drbt", "--columns", "n,m,a", "--seed", "3", "--quiet", "--json"],
        ["--n-components", "2"],
        ["--k-dims", "2"],
    ),
}


@pytest.mark.parametrize("family", sorted(OLD_AND_NEW))
def test_an_old_spelling_runs_as_the_new_one_with_one_notice(tmp_path, monkeypatch, family):
    monkeypatch.chdir(tmp_path)
    base, new, old = OLD_AND_NEW[family]
    data = ["--data", _table(tmp_path)]
    out = ["--out", "new.csv"] if family == "anonymize drbt" else []
    now = run_cli(*base, *data, *new, *out)
    out = ["--out", "old.csv"] if family == "anonymize drbt" else []
    then = run_cli(*base, *data, *old, *out)
    assert now.code == then.code and now.code in (0, 1), now.err
    assert "deprecated" not in now.err
    notices = [line for line in then.err_lines if "deprecated" in line]
    assert len(notices) == len(set(old) & {"--K", "--sensitive", "--k-dims"})
    for name in (word for word in old if word.startswith("--")):
        renamed = dict(zip(old, new, strict=True))[name]
        assert f"use {renamed} " in " ".join(notices)
    if family == "anonymize drbt":
        assert (tmp_path / "old.csv").read_text() == (tmp_path / "new.csv").read_text()
    else:
        assert then.out == now.out
