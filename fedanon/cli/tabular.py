"""What `anonymize kactus` and `anonymize mondrian` share: the options and the handler of a
k-anonymous release by suppression (both algorithms build on fedanon/algorithms/tabular.py).

Heavy imports stay inside the handler so that ``fedanon --help`` stays fast.
"""

from __future__ import annotations

import argparse

from fedanon.cli.common import names, print_summary, split_list, step_progress
from fedanon.cli.reporting import (
    add_report_options,
    stage_html,
    suppression_release_report,
    wants_report,
)


def add_release_options(parser: argparse.ArgumentParser) -> None:
    """The options of a k-anonymous release by suppression (kactus, mondrian)."""
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


def run_release(
    args: argparse.Namespace, method: str, anonymize, extra: dict, command: str = "anonymize"
) -> int:
    """Read the table, run `anonymize` with the shared options and `extra`, write the release,
    its reports, and print the summary (titled `fedanon COMMAND METHOD`)."""
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
        f"fedanon {command} {method}",
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
