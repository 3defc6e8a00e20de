"""Entry point of the `fedanon` console script.

Each subcommand group lives in its own module exposing `register(subparsers)`; the module list
below is the only place that knows them all. User errors (`FedanonError`) end as one line on
stderr and a non-zero exit code; `--debug` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from fedanon import __version__
from fedanon.errors import FedanonError, one_line

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
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="fedanon",
        description="Joint anonymization of hospital tables (LKC-privacy, DRBT, ...).",
    )
    parser.add_argument("--version", action="version", version=f"fedanon {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the chosen command, map user errors to one-line messages."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.handler(args)
    except FedanonError as exc:
        if args.debug:
            raise
        print(f"fedanon: error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("fedanon: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
