"""`anonymize mondrian`: k-anonymity by strict multidimensional median partitioning.

The `anonymize` group (cli/anonymize.py) calls `add_anonymize_mondrian`; heavy imports stay
inside the handler so that ``fedanon --help`` stays fast.
"""

from __future__ import annotations

import argparse

from fedanon.cli.common import split_list
from fedanon.cli.tabular import add_release_options, run_release
from fedanon.errors import FedanonError


def add_anonymize_mondrian(methods: argparse._SubParsersAction) -> None:
    """Add `mondrian` to the `fedanon anonymize` methods."""
    mondrian = methods.add_parser(
        "mondrian",
        help="k-anonymity by strict multidimensional median partitioning (baseline)",
        description="Cut the table at medians of the widest QID until no cut leaves k records "
        "on both sides; numbers become [lo, hi], categories without order their single value "
        "or the marker.",
    )
    add_release_options(mondrian)
    mondrian.add_argument(
        "--order",
        action="append",
        default=[],
        metavar="COL=v1,v2,..",
        help="value order of an ordered categorical QID (repeatable)",
    )
    mondrian.set_defaults(handler=run_anonymize_mondrian)


def run_anonymize_mondrian(args: argparse.Namespace) -> int:
    from fedanon.algorithms.mondrian.api import anonymize_mondrian

    orders: dict[str, list[str]] = {}
    for spec in args.order:
        column, sep, values = spec.partition("=")
        if not sep or not column.strip() or not split_list(values):
            raise FedanonError(f"--order must look like COL=v1,v2, got '{spec}'")
        orders[column.strip()] = split_list(values)
    return run_release(args, "mondrian", anonymize_mondrian, {"orders": orders})
