"""One vocabulary across commands: help on every option, the shared option names, the exit-code
table, and the old spellings accepted with a notice."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from fedanon.cli.deprecated import RENAMED
from fedanon.cli.main import build_parser
from fedanon.cli.parser import EXIT_CODES

from ..clirun import run_cli


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
        "evaluate", "queries", "--data", "raw.csv", "--qid", "a,b", "--sensitive", "s",
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
