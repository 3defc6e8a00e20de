"""``fedanon sim c45``: federated C4.5 over N real party daemons on loopback.

The table is split over the parties, the tree grown by the leader from secure sums of counts
(leader/kinds/c45.py), and compared, node for node, with C4.5 fitted on the whole table: the
report says whether they are equal. Heavy imports stay inside the handler.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fedanon.cli.choices import CLASSIFICATION_SUM_MODE
from fedanon.cli.common import (
    add_sim_options,
    add_sum_mode_option,
    add_transport_option,
    check_ring_parties,
    names,
    print_summary,
    sim_federation,
    sim_outputs,
    split_list,
    step_progress,
)
from fedanon.errors import FedanonError


def add_sim_c45(methods: argparse._SubParsersAction) -> None:
    """Add `c45` to the `fedanon sim` methods."""
    parser = methods.add_parser(
        "c45",
        help="federated C4.5 over N real party daemons on loopback",
        description="Split --data over N parties, grow C4.5 at the leader from secure sums of "
        "counts, and compare the tree with C4.5 fitted on the whole table.",
    )
    parser.add_argument("--data", required=True, help="the table to split over the parties")
    parser.add_argument("--delimiter", help="CSV delimiter")
    parser.add_argument("--class", dest="class_column", required=True, help="class column")
    parser.add_argument(
        "--features",
        type=names,
        help="feature columns, comma-separated (default: every other column)",
    )
    parser.add_argument(
        "--numeric", type=names, help="numeric feature columns (threshold tests), comma-separated"
    )
    parser.add_argument("--min-leaf", type=int, default=2, help="C4.5's -m (default 2)")
    parser.add_argument("--cf", type=float, default=0.25, help="C4.5's -c (default 0.25)")
    parser.add_argument("--no-prune", action="store_true", help="keep the unpruned tree")
    parser.add_argument(
        "--no-subtree-raising", action="store_true", help="prune by subtree replacement only"
    )
    parser.add_argument(
        "--narrow",
        action="store_true",
        help="count numeric histograms over the values present at the parent node only "
        "(fewer counts; the parties learn those values: docs/federated_classification.md)",
    )
    parser.add_argument("--parties", type=int, default=3, help="number of hospitals (default 3)")
    parser.add_argument("--split", default="random", help="random (default) or by-column=COL")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random split")
    add_sum_mode_option(parser, CLASSIFICATION_SUM_MODE)
    add_transport_option(parser)
    parser.add_argument(
        "--allow-two-parties",
        action="store_true",
        help="accept 2 parties (each learns the other's class counts at every node)",
    )
    add_sim_options(parser, out_help="the tree, C4.5's text form (atomic)")
    parser.set_defaults(handler=run_sim_c45)


def run_sim_c45(args: argparse.Namespace) -> int:
    from fedanon.atomic import write_json_atomic
    from fedanon.leader.kinds.c45 import C45LeaderJob, c45_summary, run_c45
    from fedanon.leader.sim import split_table
    from fedanon.readers.table_io import read_table, require_columns
    from fedanon.utility.c45 import C45

    check_ring_parties(args.parties, args.allow_two_parties)
    sim_outputs(args, [args.data], ("--out", "--report"))
    table = read_table(args.data, args.delimiter)
    require_columns(table, [args.class_column], args.data)
    features = split_list(args.features) or [c for c in table.columns if c != args.class_column]
    numeric = split_list(args.numeric)
    require_columns(table, [*features, *numeric], args.data)
    if args.class_column in features:
        raise FedanonError(f"--features: the class column '{args.class_column}' is a feature")
    outside = [c for c in numeric if c not in features]
    if outside:
        raise FedanonError(f"--numeric: '{outside[0]}' is not a feature")
    try:  # C4.5's own checks of -m and -c, before any daemon starts
        central = C45(args.min_leaf, args.cf, not args.no_prune, not args.no_subtree_raising)
    except ValueError as exc:
        raise FedanonError(f"C4.5 options: {exc}") from None
    parts = split_table(table, args.parties, args.split, args.seed)
    with (
        step_progress("federated C4.5", args.quiet or args.json) as show,
        sim_federation(args, parts, None, show) as fed,
    ):
        job = C45LeaderJob(
            parties=fed.hops,
            tls=fed.leader_tls,
            relay_listen=fed.relay_listen,
            features=features,
            numeric=numeric,
            class_column=args.class_column,
            out=Path(args.out),
            min_leaf=args.min_leaf,
            cf=args.cf,
            prune=not args.no_prune,
            subtree_raising=not args.no_subtree_raising,
            narrow=args.narrow,
            sum_mode=args.sum_mode or C45LeaderJob.sum_mode,  # unset: the kind's
            allow_two_parties=args.allow_two_parties,
        )
        report = run_c45(job)
    central.fit(table[features], table[args.class_column], numeric)
    report["equals_centralized"] = Path(args.out).read_text("utf-8") == central.to_text() + "\n"
    if args.report:
        write_json_atomic(Path(args.report), report)
    rows = [
        *c45_summary(report),
        ("tree equals C4.5 on the whole table", report["equals_centralized"]),
    ]
    print_summary("fedanon sim c45", rows, report if args.json else None)
    return 0
