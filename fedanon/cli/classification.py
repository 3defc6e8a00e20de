"""`evaluate classification`: the kACTUS paper's classification protocol over k-anonymous
releases (fedanon/experiments/classification.py).

The `evaluate` group (cli/evaluate.py) calls `add_evaluate_classification`; heavy imports stay
inside the handler so that ``fedanon --help`` stays fast.
"""

from __future__ import annotations

import argparse

from fedanon.cli.common import ints, names, print_summary, split_list, step_progress
from fedanon.errors import FedanonError


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
