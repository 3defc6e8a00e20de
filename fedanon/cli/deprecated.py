"""Old option spellings, still accepted for one release with a one-line notice on stderr.

The CLI speaks one vocabulary (docs/cli.md): the input table is ``--data``, a release being
evaluated ``--release``, the output table ``--out``, the JSON report ``--report``, the minimum
group size ``--k``, LKC's sensitive values ``--sensitive-values``, a sensitive column
``--sensitive-column``, DRBT's kept dimensions ``--n-components``. Options renamed to reach it
are rewritten here, before parsing, so that the parsers (and their help)
only know the new names and their required-option checks still apply.
"""

from __future__ import annotations

from typing import TextIO

#: The same concept has one option name in every command (docs/cli.md, "One vocabulary").
_LKC = {"--K": "--k", "--sensitive": "--sensitive-values"}
_SENSITIVE_COLUMN = {"--sensitive": "--sensitive-column"}
_DRBT = {"--k-dims": "--n-components"}

#: command words -> {old option: new option}
RENAMED: dict[tuple[str, ...], dict[str, str]] = {
    ("anonymize", "lkc"): _LKC,
    ("check", "lkc"): _LKC,
    ("sim", "lkc"): _LKC,
    ("demo",): {"--K": "--k"},
    ("evaluate", "lkc-sweep"): {"--K": "--k"},
    ("evaluate", "lkc"): {"--raw": "--data", "--out": "--report"},
    ("evaluate", "queries"): {"--out": "--report", **_SENSITIVE_COLUMN},
    ("evaluate", "randomization"): _SENSITIVE_COLUMN,
    ("evaluate", "sanitize"): {"--original": "--data", "--sanitized": "--release"},
    ("anonymize", "alpha-k"): _SENSITIVE_COLUMN,
    ("check", "alpha-k"): _SENSITIVE_COLUMN,
    ("check", "l-diversity"): _SENSITIVE_COLUMN,
    ("check", "t-closeness"): _SENSITIVE_COLUMN,
    ("anonymize", "drbt"): _DRBT,
    ("evaluate", "drbt"): _DRBT,
    ("sim", "drbt"): _DRBT,
}


def _renames(argv: list[str]) -> dict[str, str]:
    """The renames of the command `argv` runs. The first word that is not an option is the
    command (the top-level options take no value); a command with subcommands has its
    subcommand next, while the second word of one without (``demo``) may be an option's value."""
    words = tuple(word for word in argv if not word.startswith("-"))
    return RENAMED.get(words[:2]) or RENAMED.get(words[:1]) or {}


def rewrite_deprecated(argv: list[str], notices: TextIO) -> list[str]:
    """`argv` with the command's old option names replaced by the new ones, one notice per
    old name however often it is given."""
    renamed = _renames(argv)
    if not renamed:
        return argv
    rewritten = []
    noted: set[str] = set()
    for word in argv:
        option, sep, value = word.partition("=")
        if option in renamed:
            new = renamed[option]
            if option not in noted:
                noted.add(option)
                print(
                    f"fedanon: note: {option} is deprecated here, use {new} (it will be removed)",
                    file=notices,
                )
            word = f"{new}{sep}{value}"
        rewritten.append(word)
    return rewritten
