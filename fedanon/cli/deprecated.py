"""Old option spellings, still accepted for one release with a one-line notice on stderr.

The CLI speaks one vocabulary (docs/cli.md): the input table is ``--data``, a release being
evaluated ``--release``, the output table ``--out``, the JSON report ``--report``. Options
renamed to reach it are rewritten here, before parsing, so that the parsers (and their help)
only know the new names and their required-option checks still apply.
"""

from __future__ import annotations

from typing import TextIO

#: command words -> {old option: new option}
RENAMED: dict[tuple[str, ...], dict[str, str]] = {
    ("evaluate", "lkc"): {"--raw": "--data", "--out": "--report"},
    ("evaluate", "queries"): {"--out": "--report"},
    ("evaluate", "sanitize"): {"--original": "--data", "--sanitized": "--release"},
}


def _command_words(argv: list[str]) -> tuple[str, ...]:
    """The first two words that are not options (the top-level options take no value)."""
    return tuple(word for word in argv if not word.startswith("-"))[:2]


def rewrite_deprecated(argv: list[str], notices: TextIO) -> list[str]:
    """`argv` with the command's old option names replaced by the new ones, each use noted."""
    renamed = RENAMED.get(_command_words(argv))
    if not renamed:
        return argv
    rewritten = []
    for word in argv:
        option, sep, value = word.partition("=")
        if option in renamed:
            new = renamed[option]
            print(
                f"fedanon: note: {option} is deprecated here, use {new} (it will be removed)",
                file=notices,
            )
            word = f"{new}{sep}{value}"
        rewritten.append(word)
    return rewritten
