"""Pieces every CLI command shares: option parsing helpers, progress display, summaries."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from fedanon.cli.choices import RING_SUM_MODE, SUM_MODES, TRANSPORTS
from fedanon.errors import FedanonError

if TYPE_CHECKING:  # imported where used: building the parser must stay light (start-up time)
    from rich.console import Console

    from fedanon.outputs import CommandOutputs


def add_sum_mode_option(parser: argparse.ArgumentParser, default: str = RING_SUM_MODE) -> None:
    """``--sum-mode`` of every simulated ring job. Left out, it is None and the kind's default
    applies (the job class's ``sum_mode``), which `default` names for the help only: ring for
    LKC and randomization, pairwise for the classification kinds."""
    parser.add_argument(
        "--sum-mode",
        choices=SUM_MODES,
        default=None,
        help="secure sum: ring (masked token passing), pairwise (masks per pair) or sparse "
        f"(pairwise with 2*ceil(log2 n) partners per party); default: {default}",
    )


def add_transport_option(parser: argparse.ArgumentParser) -> None:
    """``--transport`` of every simulated federation (party.toml/job.toml ``transport``)."""
    parser.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default="direct",
        help="direct: every party listens and the ring's hops dial each other; outbound: the "
        "parties listen on no port and dial the leader's relay (docs/leakage.md, The relay)",
    )


SIM_WORKDIR_HELP = "keep configs, certificates and logs here"


def add_sim_options(
    parser: argparse.ArgumentParser,
    *,
    workdir_help: str = SIM_WORKDIR_HELP,
    out_help: str | None = None,
    out_required: bool = True,
    reports: bool = True,
) -> None:
    """The options every ``fedanon sim`` command shares, in this order: ``--insecure``,
    ``--workdir``, then ``--out`` (with `out_help`: the command's release), ``--report``,
    ``--json`` and ``--quiet`` (unless `reports` is false: the command adds its own).
    :func:`sim_outputs` claims what they name."""
    parser.add_argument("--insecure", action="store_true", help="no TLS (local experiments only)")
    parser.add_argument("--workdir", help=workdir_help)
    if out_help is not None:
        parser.add_argument("--out", required=out_required, help=out_help)
    if reports:
        parser.add_argument("--report", help="JSON report path")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--quiet", action="store_true", help="no progress display")


def sim_outputs(
    args: argparse.Namespace, inputs: list[str | None], claims: tuple[str, ...] = ()
) -> CommandOutputs:
    """A ``sim`` command's outputs claimed before any daemon starts (the file options named in
    `claims`, e.g. ``("--out", "--report")``, then a ``--workdir``), then the ``--insecure``
    warning: a bad output path is the command's only line on stderr."""
    from fedanon.federation.tls import insecure_warning
    from fedanon.outputs import CommandOutputs

    outputs = CommandOutputs(inputs=inputs)
    for option in claims:
        outputs.claim(option, getattr(args, option.removeprefix("--").replace("-", "_")))
    if args.workdir:
        outputs.claim_directory("--workdir", args.workdir)
    if args.insecure:
        print(insecure_warning("--insecure"), file=sys.stderr)
    return outputs


def add_evaluation_options(parser: argparse.ArgumentParser) -> None:
    """What an LKC release's evaluation reads besides the tables (``evaluate lkc`` and
    ``sim evaluate``): the taxonomy, the QIDs, the class and the tables' delimiter."""
    parser.add_argument("--taxonomy", required=True, help="gives QIDs, numeric QIDs and the class")
    parser.add_argument("--qid", type=names, help="QIDs a,b (default: the taxonomy's)")
    parser.add_argument("--class", dest="class_column", help="class column (default: taxonomy's)")
    parser.add_argument(
        "--delimiter", help="CSV delimiter of both tables (default ',' or tab for .tsv)"
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


def support(text: str) -> float:
    """argparse type of a minimum support: a fraction in (0, 1]. Zero would make every itemset
    frequent (their number grows as 2^items), so it is refused like a negative value."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got '{text}'") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got '{text}'")
    return value


def fraction(text: str) -> float:
    """argparse type of a threshold in [0, 1] (a confidence)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got '{text}'") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got '{text}'")
    return value


def positive_int(text: str) -> int:
    """argparse type of a count that must be at least 1 (budgets, sizes)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got '{text}'")
    return value


def per_item_numbers(text: str) -> str:
    """:func:`numbers` where a value may repeat (one per rule or attribute: ``0.5,0.5``)."""
    return numbers(text, repeats=True)


#: Most party daemons one simulation starts: each is a Python process with its own port, log
#: and descriptors, all on this one machine (docs/cli.md, "sim").
MAX_SIM_PARTIES = 64
#: What one simulated party daemon is budgeted (resident memory, open descriptors at the leader).
PARTY_MEMORY_BYTES = 200 * 2**20
PARTY_DESCRIPTORS = 16


def max_sim_parties() -> int:
    """How many party daemons this machine can hold: :data:`MAX_SIM_PARTIES`, fewer when the
    available memory or the descriptor limit would run out first."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    by_fds = MAX_SIM_PARTIES if soft == resource.RLIM_INFINITY else soft // PARTY_DESCRIPTORS
    return max(1, min(MAX_SIM_PARTIES, by_fds, _available_memory() // PARTY_MEMORY_BYTES))


def _available_memory() -> int:
    """MemAvailable from /proc/meminfo (bytes); physical memory where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_parties(count: int, minimum: int, why: str) -> None:
    """Refuse ``--parties`` below the protocol's `minimum` (`why` says what it needs) or above
    what this machine can run (:func:`max_sim_parties`), before any daemon starts."""
    if count < minimum:
        raise FedanonError(f"--parties {count}: {why}")
    most = max_sim_parties()
    if count > most:
        raise FedanonError(
            f"--parties {count}: this machine can run at most {most} simulated parties "
            f"(up to {MAX_SIM_PARTIES}, {PARTY_MEMORY_BYTES // 2**20} MiB of available memory "
            f"and {PARTY_DESCRIPTORS} open files each)"
        )


def check_ring_parties(count: int, allow_two: bool) -> None:
    """The ring jobs' party count (sim lkc, sim randomize): 3 or more, 2 with the option."""
    if allow_two:
        check_parties(count, 2, "a federation needs at least 2 parties")
    else:
        check_parties(count, 3, "a ring needs 3 parties (2 with --allow-two-parties)")


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


class ProgressLine:
    """What a command tells about its progress, on stderr: `phase(text)` for the few lines
    that say where the time goes (start-up, each protocol phase, each fold), calling the
    object for the frequent steps inside a phase (a specialization, a row of a sweep).

    On a terminal both update one spinner line and a phase also stays printed above it. Elsewhere
    (container logs, ``2>file``) there is no spinner and no carriage return: each phase is one
    timestamped line, and a step becomes a line only once `STEP_SECONDS` have passed since the
    last line, so that a long phase still shows it is alive without flooding the log.
    """

    STEP_SECONDS = 15.0

    def __init__(
        self,
        title: str,
        update: Callable[[str], None] | None = None,
        console: Console | None = None,
    ) -> None:
        self.title = title
        self._update = update  # the spinner's; None: plain lines
        self._console = console  # the spinner's, to print a phase above it
        self._started = self._last_line = time.monotonic()

    def __call__(self, text: str) -> None:
        if self._update is not None:
            self._update(f"{self.title}: {text}")
        elif time.monotonic() - self._last_line >= self.STEP_SECONDS:
            self._line(text)

    def phase(self, text: str) -> None:
        if self._update is not None and self._console is not None:
            self._update(f"{self.title}: {text}")
            self._console.print(f"{self.title}: {text}", markup=False, highlight=False)
        else:
            self._line(text)

    def _line(self, text: str) -> None:
        now = time.monotonic()
        self._last_line = now
        stamp = time.strftime("%H:%M:%S")
        print(
            f"fedanon: [{stamp} +{now - self._started:.1f}s] {self.title}: {text}",
            file=sys.stderr,
            flush=True,
        )


class _Silent(ProgressLine):
    """`--quiet`: nothing at all."""

    def __call__(self, text: str) -> None:
        pass

    def phase(self, text: str) -> None:
        pass


@contextlib.contextmanager
def step_progress(title: str, quiet: bool) -> Iterator[ProgressLine]:
    """Progress on stderr for one command (see :class:`ProgressLine`); silent when quiet."""
    if quiet:
        yield _Silent(title)
        return
    console = stderr_console()
    if not console.is_terminal:
        yield ProgressLine(title)
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(title, total=None)
        yield ProgressLine(
            title, lambda text: progress.update(task, description=text), progress.console
        )


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


@contextlib.contextmanager
def sim_federation(
    args: argparse.Namespace,
    parts: list[Any],
    taxonomy: Any,
    show: ProgressLine | None = None,
    **options: Any,
) -> Iterator[Any]:
    """The simulated federation a ``sim`` command runs on: one daemon per part, started as the
    command's ``--insecure``, ``--workdir`` and ``--transport`` say (start-up progress to
    `show`), stopped with everything it wrote outside the work folder when the block ends."""
    from pathlib import Path

    from fedanon.leader.sim import federation

    with federation(
        parts,
        taxonomy,
        secure=not args.insecure,
        workdir=Path(args.workdir) if args.workdir else None,
        on_phase=show.phase if show is not None else None,
        transport=args.transport,
        **options,
    ) as fed:
        yield fed
