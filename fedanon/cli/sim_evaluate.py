"""``fedanon sim evaluate``: the LKC paper's BE/CE/UE of a release over N real party daemons on
loopback, without pooling (leader/kinds/evaluate.py).

The options are ``fedanon evaluate lkc``'s, except that a federation has no global row order:
instead of ``--train-rows`` every party holds out the rows whose keyed hash falls below
``--test-fraction`` (``--seed`` is the key). The report says whether the figures equal the
centralized protocol's on the whole table split the same way. Heavy imports stay inside.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fedanon.cli.choices import CLASSIFICATION_SUM_MODE
from fedanon.cli.common import (
    add_evaluation_options,
    add_sim_options,
    add_sum_mode_option,
    add_transport_option,
    check_ring_parties,
    print_summary,
    sim_federation,
    sim_outputs,
    split_list,
    step_progress,
)
from fedanon.errors import FedanonError


def add_sim_evaluate(methods: argparse._SubParsersAction) -> None:
    """Add `evaluate` to the `fedanon sim` methods."""
    parser = methods.add_parser(
        "evaluate",
        help="CE/BE/UE/DR of an LKC release over N real party daemons on loopback",
        description="Split --data over N parties; each tests the leader's trees on its own "
        "held-out rows and only the secure sums of the errors reach the leader.",
    )
    parser.add_argument("--data", required=True, help="the raw table to split over the parties")
    parser.add_argument("--release", required=True, help="its release (rows in any order)")
    add_evaluation_options(parser)
    parser.add_argument(
        "--test-fraction",
        type=float,
        default=0.3,
        help="the share of rows every party holds out to test, by a keyed hash of the row "
        "(default 0.3; the federation's --train-rows)",
    )
    parser.add_argument("--seed", type=int, default=1, help="the key of that hash (default 1)")
    parser.add_argument("--parties", type=int, default=3, help="number of hospitals (default 3)")
    parser.add_argument("--split", default="random", help="random (default) or by-column=COL")
    parser.add_argument(
        "--split-seed", type=int, default=1, help="seed of the random split (default 1)"
    )
    add_sum_mode_option(parser, CLASSIFICATION_SUM_MODE)
    add_transport_option(parser)
    parser.add_argument(
        "--allow-two-parties",
        action="store_true",
        help="accept 2 parties (each learns the other's error and class counts)",
    )
    add_sim_options(parser)
    parser.set_defaults(handler=run_sim_evaluate)


def run_sim_evaluate(args: argparse.Namespace) -> int:
    from fedanon.atomic import write_json_atomic
    from fedanon.cli.reporting import evaluation_rows
    from fedanon.leader.kind import Progress
    from fedanon.leader.kinds.evaluate import FIGURE_KEYS, EvaluateLeaderJob, federated_figures
    from fedanon.leader.sim import split_table
    from fedanon.leader.simulate_evaluation import equals, evaluation_setup
    from fedanon.readers.table_io import read_table

    check_ring_parties(args.parties, args.allow_two_parties)
    sim_outputs(args, [args.data, args.release, args.taxonomy], ("--report",))
    raw = read_table(args.data, args.delimiter)
    try:
        job, expected = evaluation_setup(
            raw,
            read_table(args.release, args.delimiter),
            args.taxonomy,
            split_list(args.qid),
            args.class_column,
            args.test_fraction,
            args.seed,
            args.release,
            sum_mode=args.sum_mode or EvaluateLeaderJob.sum_mode,  # unset: the kind's
            allow_two_parties=args.allow_two_parties,
        )
    except FedanonError as exc:
        raise FedanonError(str(exc).replace("test_fraction", "--test-fraction")) from None
    parts = split_table(raw, args.parties, args.split, args.split_seed)
    with (
        step_progress("federated evaluation", args.quiet or args.json) as show,
        sim_federation(args, parts, Path(args.taxonomy), show) as fed,
    ):
        job.parties, job.tls, job.relay_listen = fed.hops, fed.leader_tls, fed.relay_listen
        report = federated_figures(job, Progress(phase=show.phase))
    report["equals_centralized"] = equals(report, expected)
    if args.report:
        write_json_atomic(Path(args.report), report)
    rows = [
        *evaluation_rows({k: report[k] for k in FIGURE_KEYS}),
        ("parties", ", ".join(report["parties"])),
        ("figures equal the centralized protocol's", report["equals_centralized"]),
    ]
    print_summary("fedanon sim evaluate", rows, report if args.json else None)
    return 0
