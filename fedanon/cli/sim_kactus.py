"""``fedanon sim kactus``: federated kACTUS over N real party daemons on loopback.

The options are `anonymize kactus`'s plus the federation's (--parties, --split, --sum-mode,
--transport, ...): the table is split over the parties, the leader runs kACTUS from secure sums
and secure unions only (leader/kinds/kactus.py), and the release, checked k-anonymous by the
independent checker, is written as `anonymize kactus` writes it. Heavy imports stay inside the
handler.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from fedanon.cli.choices import CLASSIFICATION_SUM_MODE
from fedanon.cli.common import (
    add_sim_options,
    add_sum_mode_option,
    add_transport_option,
    check_ring_parties,
    sim_federation,
    sim_outputs,
    step_progress,
)
from fedanon.cli.kactus import add_kactus_options
from fedanon.cli.tabular import add_release_options, run_release
from fedanon.errors import FedanonError

if TYPE_CHECKING:
    import pandas as pd

    from fedanon.federation.kactus_job import KactusOptions
    from fedanon.release import Release


def add_sim_kactus(methods: argparse._SubParsersAction) -> None:
    """Add `kactus` to the `fedanon sim` methods."""
    parser = methods.add_parser(
        "kactus",
        help="federated kACTUS over N real party daemons on loopback",
        description="Split --data over N parties and k-anonymize their union by kACTUS "
        "without pooling it: the tree, compliance, donations and group values from secure "
        "sums, the release through the secure set union, checked by the independent checker.",
    )
    add_release_options(parser)
    add_kactus_options(parser)
    parser.add_argument("--parties", type=int, default=3, help="number of hospitals (default 3)")
    parser.add_argument("--split", default="random", help="random (default) or by-column=COL")
    parser.add_argument(
        "--split-seed", type=int, default=1, help="seed of the random split (default 1)"
    )
    parser.add_argument(
        "--narrow",
        action="store_true",
        help="count numeric histograms over the values present at the parent node only "
        "(fewer counts; the parties learn those values: docs/federated_classification.md)",
    )
    add_sum_mode_option(parser, CLASSIFICATION_SUM_MODE)
    add_transport_option(parser)
    parser.add_argument(
        "--allow-two-parties",
        action="store_true",
        help="accept 2 parties (each learns the other's counts at every node and group)",
    )
    add_sim_options(parser, reports=False)  # --out, --report, ...: add_release_options
    parser.set_defaults(handler=run_sim_kactus)


def run_sim_kactus(args: argparse.Namespace) -> int:
    from fedanon.federation.kactus_job import KactusOptions

    check_ring_parties(args.parties, args.allow_two_parties)
    if args.k < 2:
        raise FedanonError(f"--k must be at least 2, got {args.k}")
    sim_outputs(args, [args.data])  # run_release claims --out and --report

    def federated(
        table: pd.DataFrame,
        *,
        class_column: str,
        qids: list[str] | None,
        k: int,
        seed: int | None,
        marker: str,
        numeric: str,
    ) -> Release:
        return _run(args, table, KactusOptions([], class_column, k, marker, numeric), qids, seed)

    return run_release(args, "kactus", federated, {"numeric": args.numeric}, "sim")


def _run(
    args: argparse.Namespace,
    table: pd.DataFrame,
    given: KactusOptions,
    qids: list[str] | None,
    seed: int | None,
) -> Release:
    """The federation's release of `table` (run_release's anonymize callable); `given`'s
    QIDs are filled in here (the class's default: every other column)."""
    from fedanon.algorithms.tabular import validate_columns
    from fedanon.leader.kinds.kactus import KactusLeaderJob, federated_kactus
    from fedanon.leader.sim import split_table

    # Before any daemon starts: the columns, and no cell equal to the marker.
    names = validate_columns(table, given.class_column, qids, given.marker)
    parts = split_table(table, args.parties, args.split, args.split_seed)
    options = replace(given, qids=names, narrow=args.narrow)
    with (
        step_progress("federated kACTUS", True) as show,
        sim_federation(args, parts, None, show) as fed,
    ):
        job = KactusLeaderJob(
            parties=fed.hops,
            tls=fed.leader_tls,
            relay_listen=fed.relay_listen,
            options=options,
            out=Path(args.out),
            seed=seed,
            sum_mode=args.sum_mode or KactusLeaderJob.sum_mode,  # unset: the kind's
            allow_two_parties=args.allow_two_parties,
        )
        release, _report = federated_kactus(job)
    return release
