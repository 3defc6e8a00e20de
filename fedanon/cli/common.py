"""Pieces every CLI command shares: option parsing helpers, progress display, summaries."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from fedanon.cli.choices import SUM_MODES
from fedanon.errors import FedanonError

if TYPE_CHECKING:  # imported where used: building the parser must stay light (start-up time)
    from rich.console import Console


def add_sum_mode_option(parser: argparse.ArgumentParser) -> None:
    """``--sum-mode`` of every simulated ring job (LKC and randomization)."""
    parser.add_argument(
        "--sum-mode",
        choices=SUM_MODES,
        default="ring",
        help="secure sum: ring (masked token passing) or pairwise (masks per pair)",
    )


def split_list(text: str | None) -> list[str]:
    """``a,b , c`` -> [a, b, c]; None or empty -> [].

    Options parsed with :func:`names` (or :func:`ints` / :func:`numbers`) have already been
    checked for empty parts and repeats by argparse, so nothing is silently skipped here.
    """
    if not text:
        return []
    return [part.strip() for part in text.split(",") if part.strip()]


def int_list(text: str | None, option: str) -> list[int]:
    """``2,4,6`` -> [2, 4, 6]; anything else is a one-line error naming `option`."""
    try:
        return [int(part) for part in split_list(text)]
    except ValueError:
        raise FedanonError(f"{option}: expected comma-separated integers, got '{text}'") from None


def _parts(text: str, repeats: bool = False) -> list[str]:
    """The stripped parts of a comma-separated option value; blank or empty parts are refused
    (and repeats unless `repeats`), as an argparse usage error."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip():
        raise argparse.ArgumentTypeError("empty list (give values separated by commas)")
    if "" in parts:
        raise argparse.ArgumentTypeError(f"empty item in '{text}'")
    repeated = next((p for i, p in enumerate(parts) if p in parts[:i]), None)
    if repeated is not None and not repeats:
        raise argparse.ArgumentTypeError(f"'{repeated}' is listed twice in '{text}'")
    return parts


def names(text: str) -> str:
    """argparse type of every comma-separated name list (``--qid a,b``): the list as given.

    A blank list, an empty part (``a,,b``, a trailing comma) or a name listed twice is a usage
    error: silently skipping it would run a job the user did not describe (``--qid ""`` used
    to mean "every column").
    """
    return ",".join(_parts(text))


def ints(text: str) -> str:
    """argparse type of integer sweeps (``--K 5,10``): :func:`names` whose parts are integers."""
    parts = _parts(text)
    try:
        [int(part) for part in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got '{text}'"
        ) from None
    return ",".join(parts)


def numbers(text: str, repeats: bool = False) -> str:
    """argparse type of number sweeps (``--psi 0,0.1``): finite numbers, each once."""
    parts = _parts(text, repeats)
    try:
        values = [float(part) for part in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got '{text}'"
        ) from None
    if not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected finite numbers, got '{text}'")
    return ",".join(parts)


def per_item_numbers(text: str) -> str:
    """:func:`numbers` where a value may repeat (one per rule or attribute: ``0.5,0.5``)."""
    return numbers(text, repeats=True)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


@contextlib.contextmanager
def step_progress(title: str, quiet: bool) -> Iterator[Callable[[str], None]]:
    """A spinner line on stderr updated with a description per step; silent when quiet."""
    if quiet:
        yield lambda _text: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = stderr_console()
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task(title, total=None)
        yield lambda text: progress.update(task, description=f"{title}: {text}")


def print_summary(title: str, rows: list[tuple[str, Any]], as_json: dict[str, Any] | None) -> None:
    """A two-column summary table on stdout, or the JSON object when `as_json` is given."""
    if as_json is not None:
        print(json.dumps(as_json, indent=2, default=str))
        return
    from rich.console import Console
    from rich.table import Table

    from fedanon.report.display import plain

    table = Table(title=title, show_header=False)
    table.add_column("item", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in rows:
        table.add_row(key, plain(value))
    console = Console(file=sys.stdout, markup=False, highlight=False)
    if not console.is_terminal:  # a pipe or file has no width: never wrap at rich's default 80
        console.width = 1000
    console.print(table)
