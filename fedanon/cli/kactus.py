"""`anonymize kactus`, `anonymize mondrian`, `check k-anonymity`, `evaluate classification`.

The command groups belong to their own modules; they call the ``add_*`` functions here. Heavy
imports stay inside the handlers so that ``fedanon --help`` stays fast.
"""

from __future__ import annotations

import argparse

from fedanon.cli.common import ints, names, print_summary, split_list, step_progress
from fedanon.cli.reporting import (
    add_report_options,
    stage_html,
    suppression_release_report,
    wants_report,
)
from fedanon.errors import FedanonError


def _add_release_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="input table (CSV with header, or Parquet)")
    parser.add_argument("--class", dest="class_column", required=True, help="class column")
    parser.add_argument(
        "--qid", type=names, help="QID columns a,b,c (default: every column but the class)"
    )
    parser.add_argument("--k", type=int, required=True, help="minimum group size, 2 <= k <= rows")
    parser.add_argument("--seed", type=int, help="reproducible run (default: secret random bits)")
    parser.add_argument("--marker", default="?", help="suppressed cell value (default '?')")
    parser.add_argument("--out", required=True, help="released table (written atomically)")
    parser.add_argument("--report", help="JSON report path")
    parser.add_argument("--delimiter", help="CSV delimiter (default ',' or tab for .tsv)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_report_options(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress display")


def add_anonymize_kactus(methods: argparse._SubParsersAction) -> None:
    """Add `kactus` and `mondrian` to the `fedanon anonymize` methods."""
    kactus = methods.add_parser(
        "kactus",
        help="k-anonymity by tree-driven multi-dimensional suppression (no taxonomy needed)",
        description="Grow a C4.5-style tree with k records per branch on the QIDs and the "
        "class, then prune it bottom-up releasing complying leaves: QIDs tested by equality "
        "are kept, numeric ones tested by inequalities get the group median (--numeric mean: "
        "the paper's group mean), the rest are suppressed.",
    )
    _add_release_options(kactus)
    kactus.add_argument(
        "--numeric",
        choices=("median", "mean"),
        default="median",
        help="value of a numeric QID tested only by inequalities: group median (default) or "
        "group mean (the paper's Fig. 6; can mislead classifiers, docs/kactus.md)",
    )
    kactus.set_defaults(handler=run_anonymize_kactus)
    mondrian = methods.add_parser(
        "mondrian",
        help="k-anonymity by strict multidimensional median partitioning (baseline)",
        description="Cut the table at medians of the widest QID until no cut leaves k records "
        "on both sides; numbers become [lo, hi], categories without order their single value "
        "or the marker.",
    )
    _add_release_options(mondrian)
    mondrian.add_argument(
        "--order",
        action="append",
        default=[],
        metavar="COL=v1,v2,..",
        help="value order of an ordered categorical QID (repeatable)",
    )
    mondrian.set_defaults(handler=run_anonymize_mondrian)


def add_check_k_anonymity(models: argparse._SubParsersAction) -> None:
    """Add `k-anonymity` to the `fedanon check` models."""
    parser = models.add_parser(
        "k-anonymity",
        help="every combination of QID values occurs at least k times",
        description="Independent of every algorithm: groups rows by their QID cell strings (a "
        "suppressed value is a value like any other). Exit 0 if k-anonymous, 1 if not, 2 for "
        "input errors.",
    )
    parser.add_argument("--data", required=True, help="released table (CSV with header)")
    parser.add_argument("--qid", type=names, required=True, help="QID columns a,b,c")
    parser.add_argument("--k", type=int, required=True, help="minimum group size")
    parser.add_argument("--delimiter", help="CSV delimiter (default ',' or tab for .tsv)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=run_check_k_anonymity)


def add_evaluate_classification(kinds: argparse._SubParsersAction) -> None:
    """Add `classification` to the `fedanon evaluate` kinds."""
    parser = kinds.add_parser(
        "classification",
        help="accuracy of classifiers trained on k-anonymous releases (5x2 cross-validation)",
        description="The kACTUS paper's protocol: 5x2 cross-validation, only the training half "
        "anonymized, classifiers tested on the raw other half; mean accuracy, std and the "
        "combined 5x2 cv F test per method and k.",
    )
    parser.add_argument("--data", required=True, help="input table (CSV with header, or Parquet)")
    parser.add_argument("--class", dest="class_column", required=True, help="class column")
    parser.add_argument(
        "--method", type=names, default="kactus", help="kactus,mondrian,tds (comma list)"
    )
    parser.add_argument("--k", type=ints, default="5,10,20,30", help="values of k (comma list)")
    parser.add_argument(
        "--inducer",
        type=names,
        default="c45",
        help="c45,naive-bayes,logistic,logistic-weka (comma list)",
    )
    parser.add_argument(
        "--qid", type=names, help="QID columns a,b,c (default: every column but the class)"
    )
    parser.add_argument("--taxonomy", help="taxonomy file (needed by --method tds)")
    parser.add_argument("--seed", type=int, default=1, help="folds and anonymization seed")
    parser.add_argument("--delimiter", help="CSV delimiter (default ',' or tab for .tsv)")
    parser.add_argument("--report", help="JSON report path")
    parser.add_argument("--chart", help="PNG chart path (accuracy against k per method)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(handler=run_evaluate_classification)


def run_anonymize_kactus(args: argparse.Namespace) -> int:
    from fedanon.algorithms.kactus.api import anonymize_kactus

    return _release(args, "kactus", anonymize_kactus, {"numeric": args.numeric})


def run_anonymize_mondrian(args: argparse.Namespace) -> int:
    from fedanon.algorithms.mondrian.api import anonymize_mondrian

    orders: dict[str, list[str]] = {}
    for spec in args.order:
        column, sep, values = spec.partition("=")
        if not sep or not column.strip() or not split_list(values):
            raise FedanonError(f"--order must look like COL=v1,v2, got '{spec}'")
        orders[column.strip()] = split_list(values)
    return _release(args, "mondrian", anonymize_mondrian, {"orders": orders})


def _release(args: argparse.Namespace, method: str, anonymize, extra: dict) -> int:
    from fedanon.outputs import CommandOutputs
    from fedanon.readers.table_io import read_table
    from fedanon.report.build import record_release_file

    outputs = CommandOutputs(inputs=[args.data])
    outputs.claim("--out", args.out)
    outputs.claim("--report", args.report)
    outputs.claim("--html", args.html)
    table = read_table(args.data, args.delimiter)
    with step_progress(method, args.quiet or args.json):
        release = anonymize(
            table,
            class_column=args.class_column,
            qids=split_list(args.qid) or None,
            k=args.k,
            seed=args.seed,
            marker=args.marker,
            **extra,
        )
    report = {**release.report, "input": str(args.data), "output": str(args.out)}
    if wants_report(args):
        report["release_report"] = suppression_release_report(
            args, table, release.table, release.report, method
        )
    with outputs.writing() as staged:
        staged.table(args.out, release.table)
        if "release_report" in report:
            record_release_file(report["release_report"], args.out, staged.path(args.out))
        if args.report:
            staged.json(args.report, report)
        stage_html(staged, args, report.get("release_report", {}))
    suppressed = report["suppressed_cells"]
    print_summary(
        f"fedanon anonymize {method}",
        [
            ("records in", report["records"]),
            ("released", report["released"]),
            ("dropped", report["dropped"]),
            ("groups", f"{report['groups']['count']} (smallest {report['groups']['min_size']})"),
            ("suppressed cells", sum(suppressed.values())),
            ("seconds", report["seconds"]),
            ("output", args.out),
        ],
        report if args.json else None,
    )
    return 0


def run_check_k_anonymity(args: argparse.Namespace) -> int:
    from fedanon.models.k_anonymity import check_k_anonymity
    from fedanon.readers.release import read_release

    if args.k < 1:
        raise FedanonError(f"--k must be at least 1, got {args.k}")
    qids = split_list(args.qid)
    table = read_release(args.data, args.delimiter)
    result = check_k_anonymity(table, qids, args.k)
    verdict = "holds" if result.ok else "VIOLATED"
    print_summary(
        f"k-anonymity {verdict}",
        [
            ("rows", result.rows),
            ("groups", result.groups),
            ("k", result.k),
            ("smallest group", result.min_group_size),
            ("violating groups", result.violating_groups),
            ("violating rows", result.violating_rows),
            ("smallest group values", result.smallest),
        ],
        {"data": args.data, "qids": qids, **result.to_dict()} if args.json else None,
    )
    return 0 if result.ok else 1


def run_evaluate_classification(args: argparse.Namespace) -> int:
    from fedanon.experiments.classification import evaluate_classification
    from fedanon.experiments.classification_chart import plot_accuracy
    from fedanon.outputs import CommandOutputs
    from fedanon.readers.table_io import read_table

    try:
        ks = [int(v) for v in split_list(args.k)]
    except ValueError:
        raise FedanonError(f"--k: expected comma-separated integers, got '{args.k}'") from None
    outputs = CommandOutputs(inputs=[args.data, args.taxonomy])
    outputs.claim("--report", args.report)
    outputs.claim("--chart", args.chart)
    table = read_table(args.data, args.delimiter)
    if args.class_column not in table.columns:
        raise FedanonError(f"{args.data}: no class column '{args.class_column}'")
    with step_progress("evaluate classification", args.quiet) as show:  # stderr: --json too
        report = evaluate_classification(
            table,
            class_column=args.class_column,
            methods=split_list(args.method),
            k_values=ks,
            inducers=split_list(args.inducer),
            qids=split_list(args.qid) or None,
            taxonomy=args.taxonomy,
            seed=args.seed,
            on_step=show.phase,
        )
    report = {**report, "input": str(args.data)}
    with outputs.writing() as staged:
        if args.report:
            staged.json(args.report, report)
        if args.chart:
            plot_accuracy(report, staged.path(args.chart))
    rows = [
        (
            f"{r['method']} k={r['k']} {r['inducer']}",
            f"{r['accuracy_mean']:.2f} ± {r['accuracy_std']:.2f} %",
        )
        for r in report["results"]
    ]
    print_summary("fedanon evaluate classification", rows, report if args.json else None)
    return 0
