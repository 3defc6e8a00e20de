"""Each method family's commands live in that family's CLI module (docs/architecture.md, "One
CLI module per family"); the group modules `anonymize`, `check` and `evaluate` only register
their groups. LKC is named like every other family: its commands are in cli/lkc*.py, not in the
group modules, and cli/kactus.py holds kACTUS alone (it once held four families)."""

from __future__ import annotations

import argparse

from fedanon.cli.main import build_parser

#: (group, command) -> the CLI module whose handler runs it.
FAMILY_MODULES = {
    ("anonymize", "lkc"): "fedanon.cli.lkc",
    ("anonymize", "drbt"): "fedanon.cli.drbt",
    ("anonymize", "alpha-k"): "fedanon.cli.alphak",
    ("anonymize", "randomize"): "fedanon.cli.randomize",
    ("anonymize", "kactus"): "fedanon.cli.kactus",
    ("anonymize", "mondrian"): "fedanon.cli.mondrian",
    ("check", "lkc"): "fedanon.cli.lkc_check",
    ("check", "alpha-k"): "fedanon.cli.alphak",
    ("check", "k-anonymity"): "fedanon.cli.k_anonymity",
    ("check", "l-diversity"): "fedanon.cli.diversity",
    ("check", "t-closeness"): "fedanon.cli.diversity",
    ("evaluate", "lkc"): "fedanon.cli.lkc_evaluate",
    ("evaluate", "lkc-sweep"): "fedanon.cli.lkc_evaluate",
    ("evaluate", "drbt"): "fedanon.cli.drbt",
    ("evaluate", "queries"): "fedanon.cli.alphak",
    ("evaluate", "randomization"): "fedanon.cli.randomize",
    ("evaluate", "classification"): "fedanon.cli.classification",
    ("evaluate", "sanitize"): "fedanon.cli.sanitize",
}
GROUP_MODULES = {"fedanon.cli.anonymize", "fedanon.cli.check", "fedanon.cli.evaluate"}


def _handlers() -> dict[tuple[str, str], str]:
    """(group, command) -> the module of its handler, for the three method groups."""
    found = {}
    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for group in ("anonymize", "check", "evaluate"):
        sub = next(
            a for a in top.choices[group]._actions if isinstance(a, argparse._SubParsersAction)
        )
        for name, parser in sub.choices.items():
            found[(group, name)] = parser.get_default("handler").__module__
    return found


def test_every_method_command_runs_from_its_familys_module() -> None:
    assert _handlers() == FAMILY_MODULES


def test_the_group_modules_run_no_command_themselves() -> None:
    assert not GROUP_MODULES & set(_handlers().values())
