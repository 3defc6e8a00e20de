"""The argument parser every fedanon command is built from: one-line errors, shown defaults,
and the exit-code table.

Kept apart from the command modules and free of heavy imports, because it is all that
`fedanon --help` and an argument error need.
"""

from __future__ import annotations

import argparse
from typing import NoReturn

#: What each exit status means, for every command (docs/cli.md prints the same table).
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (0, "success (a check: the table satisfies the model)"),
    (1, "a check ran and the table does NOT satisfy the model (check ...)"),
    (2, "usage or input error: bad option or value, unreadable or invalid file, refused output"),
    (3, "infeasible: even the fully generalized table cannot meet the privacy requirement"),
    (4, "a party failed, refused the session or did not answer (leader run, sim, demo)"),
    (130, "interrupted (Ctrl-C); no output was written, or all were before it came"),
    (143, "terminated (SIGTERM); no output was written, or all were before it came"),
)


def exit_code_epilog() -> str:
    """The exit-code table as the text under `fedanon --help`."""
    lines = ["exit codes:"]
    lines += [f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES]
    return "\n".join(lines)


class DefaultsFormatter(argparse.HelpFormatter):
    """Append ``(default: X)`` to an option's help when it has a default worth showing.

    argparse's ArgumentDefaultsHelpFormatter also prints ``(default: None)`` and ``False`` for
    flags, which says nothing; a help text that already explains its default is left alone.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            not action.option_strings
            or default in (None, False, argparse.SUPPRESS)
            or default == []
            or "default" in text.lower()
        ):
            return text
        return f"{text} (default: %(default)s)"


class RawDescriptionDefaultsFormatter(DefaultsFormatter, argparse.RawDescriptionHelpFormatter):
    """Shown defaults, and a description printed as written (tables, examples)."""


class OneLineParser(argparse.ArgumentParser):
    """argparse with its usage errors on one line (the CLI's promise for every user error) and
    defaults shown in help.

    Subcommand parsers inherit the class, so every level answers the same way.
    """

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")
