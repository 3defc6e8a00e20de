"""`fedanon anonymize drbt` and `fedanon evaluate drbt`: random-projection release and its report.

The `anonymize` and `evaluate` command groups belong to their own modules; they call
`add_anonymize_drbt` and `add_evaluate_drbt` to add the `drbt` method here. The projection
matrix is never written anywhere; `--seed` makes a run reproducible, and whoever knows the seed
knows the matrix, so it is never printed or put in a report.
"""

from __future__ import annotations

import argparse

from fedanon.cli.choices import DRBT_MATRICES, DRBT_STARTS
from fedanon.cli.common import int_list, ints, names, print_summary, split_list, step_progress
from fedanon.errors import FedanonError


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="input table (CSV with header, or Parquet)")
    parser.add_argument(
        "--columns", type=names, help="numeric columns to project a,b,c (default: all but --id)"
    )
    parser.add_argument("--id", dest="id_column", help="object id column (replaced by tokens)")
    parser.add_argument(
        "--n-components",
        dest="k_dims",
        type=int,
        required=True,
        metavar="N",
        help="dimensions kept, 1 <= N < number of columns",
    )
    parser.add_argument(
        "--matrix",
        choices=DRBT_MATRICES,
        default="sparse",
        help="gaussian (RP1) or sparse Achlioptas (RP2, default)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="reproducible matrix (default: 128 secret bits from the OS); "
        "the seed then reveals the matrix, keep it secret",
    )
    parser.add_argument(
        "--rescale",
        action="store_true",
        help="multiply the release by sqrt(d/k) (the thesis did not)",
    )
    parser.add_argument("--delimiter", help="CSV delimiter (default ',' or tab for .tsv)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def add_anonymize_drbt(methods: argparse._SubParsersAction) -> None:
    """Add `drbt` to the `fedanon anonymize` methods."""
    parser = methods.add_parser(
        "drbt",
        help="random projection for privacy-preserving clustering (DRBT)",
        description="Z-score the columns, project them with a secret random matrix to K "
        "dimensions, replace ids by random tokens, shuffle the rows.",
    )
    _add_common(parser)
    parser.add_argument("--out", required=True, help="released table (written atomically)")
    parser.add_argument("--id-map", help="token -> id map for the data owner (keep private)")
    parser.add_argument("--report", help="JSON report path")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(handler=run_anonymize_drbt)


def add_evaluate_drbt(subparsers: argparse._SubParsersAction) -> None:
    """Add `drbt` to the `fedanon evaluate` subcommands."""
    parser = subparsers.add_parser(
        "drbt",
        help="stress and F-measure of DRBT releases of a table",
        description="Thesis protocol: mean stress of --projections releases per kept dimension "
        "and the overall F-measure of K-means on --trials releases against K-means "
        "on the original, for each K.",
    )
    _add_common(parser)
    parser.add_argument("--clusters", type=ints, default="2,3,4,5", help="values of K for K-means")
    parser.add_argument("--trials", type=int, default=10, help="releases per F-measure")
    parser.add_argument("--projections", type=int, default=5, help="releases per stress value")
    parser.add_argument(
        "--starts",
        choices=DRBT_STARTS,
        default="paired",
        help="K-means on the original and on the release start from the same rows (paired, "
        "default) or from rows drawn for each",
    )
    parser.add_argument(
        "--kept-dims",
        type=ints,
        help="kept dimensions for the stress curve a,b,c "
        "(default: six from d-1 down to d/3, plus --n-components)",
    )
    parser.add_argument("--report", help="JSON report path")
    parser.add_argument("--chart", help="PNG chart path (stress vs k, F vs K)")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(handler=run_evaluate_drbt)


def run_anonymize_drbt(args: argparse.Namespace) -> int:
    from fedanon.algorithms.drbt.api import anonymize_drbt
    from fedanon.outputs import CommandOutputs
    from fedanon.readers.table_io import read_table

    if args.id_map and not args.id_column:
        raise FedanonError("--id-map needs --id (there are no ids to map)")
    outputs = CommandOutputs(inputs=[args.data])
    outputs.claim("--out", args.out)
    outputs.claim("--id-map", args.id_map)
    outputs.claim("--report", args.report)
    table = read_table(args.data, args.delimiter)
    with step_progress("projecting", args.quiet or args.json):
        release = anonymize_drbt(
            table,
            n_components=args.k_dims,
            matrix=args.matrix,
            columns=split_list(args.columns) or None,
            id_column=args.id_column,
            seed=args.seed,
            rescale=args.rescale,
            source=str(args.data),
        )
    report = {**release.report, "input": str(args.data), "output": str(args.out)}
    with outputs.writing() as staged:
        staged.table(args.out, release.table)
        if args.id_map and "id_map" in release.tables:
            staged.table(args.id_map, release.tables["id_map"])
        if args.report:
            staged.json(args.report, report)
    print_summary(
        "fedanon anonymize drbt",
        [
            ("records", report["records"]),
            ("d -> k", f"{report['d']} -> {report['k']}"),
            ("matrix", report["matrix"] + (" (rescaled)" if report["rescaled"] else "")),
            (
                "stress",
                f"{report['stress']:.4f}"
                + ("" if report["stress_exact"] else f" ({report['stress_pairs']} pairs)"),
            ),
            ("ids", "replaced by tokens" if args.id_column else "none"),
            ("output", args.out),
        ],
        report if args.json else None,
    )
    return 0


def run_evaluate_drbt(args: argparse.Namespace) -> int:
    from fedanon.algorithms.drbt.api import evaluate_drbt
    from fedanon.algorithms.drbt.chart import plot_evaluation
    from fedanon.outputs import CommandOutputs
    from fedanon.readers.table_io import read_table

    outputs = CommandOutputs(inputs=[args.data])
    outputs.claim("--report", args.report)
    outputs.claim("--chart", args.chart)
    table = read_table(args.data, args.delimiter)
    with step_progress("evaluating", args.quiet or args.json) as show:
        report = evaluate_drbt(
            table,
            n_components=args.k_dims,
            matrix=args.matrix,
            columns=split_list(args.columns) or None,
            id_column=args.id_column,
            seed=args.seed,
            rescale=args.rescale,
            clusters=int_list(args.clusters, "--clusters"),
            trials=args.trials,
            projections=args.projections,
            starts=args.starts,
            kept_dims=int_list(args.kept_dims, "--kept-dims") or None,
            on_step=show,
        )
    report = {**report, "input": str(args.data)}
    with outputs.writing() as staged:
        if args.report:
            staged.json(args.report, report)
        if args.chart:
            plot_evaluation(report, staged.path(args.chart))
    rows = [
        ("records", report["records"]),
        ("d -> k", f"{report['d']} -> {report['k']}"),
        ("matrix", report["matrix"]),
    ]
    rows += [(f"stress k={p['kept']}", f"{p['mean']:.4f}") for p in report["stress"]["curve"]]
    rows += [
        (
            f"F-measure K={s['K']}",
            f"{s['mean']:.3f} (min {s['min']:.3f}, max {s['max']:.3f}, std {s['std']:.3f})",
        )
        for s in report["f_measure"]["by_clusters"]
    ]
    print_summary("fedanon evaluate drbt", rows, report if args.json else None)
    return 0
