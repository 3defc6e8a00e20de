"""Entry point of the `fedanon` console script.

Each subcommand group lives in its own module exposing `register(subparsers)`; the module list
below is the only place that knows them all. User errors (`FedanonError`) end as one line on
stderr and a non-zero exit code; `--debug` shows the traceback instead. The exit codes are the
table `EXIT_CODES` in fedanon/cli/parser.py, printed under `fedanon --help`. An interrupt or
SIGTERM unwinds like an error, so no partial output or temporary file is left behind.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import shlex
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType

from fedanon import __version__
from fedanon.cli.deprecated import rewrite_deprecated
from fedanon.cli.parser import OneLineParser, RawDescriptionDefaultsFormatter, exit_code_epilog
from fedanon.crypto.errors import CryptoError
from fedanon.errors import FedanonError, one_line
from fedanon.interrupts import raise_interrupted, raise_safely

COMMAND_MODULES = (
    "fedanon.cli.anonymize",
    "fedanon.cli.check",
    "fedanon.cli.evaluate",
    "fedanon.cli.certs",
    "fedanon.cli.party",
    "fedanon.cli.leader",
    "fedanon.cli.sim",
    "fedanon.cli.demo",
    "fedanon.cli.sanitize",
    "fedanon.cli.taxonomy",
)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is so that `finally` blocks remove temporary files."""


def raise_terminated(signum: int, frame: FrameType | None) -> None:
    """The SIGTERM handler of a command: :class:`Terminated`, raised where no lock is left
    held (`raise_safely`)."""
    raise_safely(Terminated, frame, signum)


@contextlib.contextmanager
def signals_unwind() -> Iterator[None]:
    """Turn SIGTERM into :class:`Terminated` while a command runs (daemons set their own), and
    Ctrl-C into KeyboardInterrupt as Python does, both raised through `raise_safely` (Python's
    own Ctrl-C handler raises anywhere, gRPC's lock entry included). A SIGINT that the shell
    ignores (a background job) stays ignored."""
    previous = signal.signal(signal.SIGTERM, raise_terminated)
    interrupt = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if interrupt:
        signal.signal(signal.SIGINT, raise_interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if interrupt:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def os_error_text(exc: OSError) -> str:
    """``PATH: reason`` for an error the operating system raised about a file."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return reason if exc.filename is None else f"{exc.filename}: {reason}"


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered subcommand."""
    parser = OneLineParser(
        prog="fedanon",
        description="Joint anonymization of hospital tables (LKC-privacy, DRBT, ...).",
        epilog=exit_code_epilog(),
        formatter_class=RawDescriptionDefaultsFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fedanon {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _inputs_recorded(args: argparse.Namespace) -> contextlib.AbstractContextManager[object]:
    """For a command that builds a report, the SHA-256 of each input as its one read parses
    it (fedanon/readers/inputs.py): the report names the inputs by the bytes used, not by a
    second read that could meet a file replaced meanwhile. Other commands hash nothing."""
    from fedanon.cli.reporting import wants_report
    from fedanon.readers.inputs import recording_inputs

    if wants_report(args) or getattr(args, "always_reports", False):
        return recording_inputs()
    return contextlib.nullcontext()


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the chosen command, map user errors to one-line messages."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(rewrite_deprecated(argv, sys.stderr))
    args.command_line = shlex.join(["fedanon", *argv])  # quoted in the steward's report
    try:
        with signals_unwind(), _inputs_recorded(args):
            code = args.handler(args)
    except (FedanonError, CryptoError) as exc:
        if args.debug:
            raise
        print(f"fedanon: error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # the file system refused a path (too long, a loop of links, ...)
        if args.debug:
            raise
        print(f"fedanon: error: {one_line(os_error_text(exc))}", file=sys.stderr)
        return 2
    except Terminated:
        print("fedanon: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("fedanon: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
