"""``fedanon anonymize lkc``: centralized LKC anonymization of one table (CLI contract), and the
LKC job options every command that runs one shares (anonymize lkc, sim, leader run)."""

from __future__ import annotations

import argparse

from fedanon.cli.choices import LKC_PRESETS, LKC_SCORES
from fedanon.cli.common import names, print_summary, split_list, step_progress
from fedanon.cli.reporting import add_report_options, lkc_release_report, stage_html
from fedanon.report.summary import seconds_text, summary_rows


def add_lkc_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by every command that runs an LKC job (anonymize, sim, leader)."""
    parser.add_argument("--taxonomy", required=True, help="taxonomy: .toml, .hchy or ARX csv dir")
    parser.add_argument(
        "--qid", type=names, help="QID columns a,b,c (default: the taxonomy's VID section)"
    )
    parser.add_argument(
        "--sensitive-values",
        dest="sensitive",
        action="append",
        default=None,
        metavar="COL=v1,v2",
        help="sensitive values (repeatable; default: the taxonomy's section)",
    )
    parser.add_argument("--class", dest="class_column", help="class column (for infogain)")
    parser.add_argument("--L", type=int, help="adversary knowledge bound L")
    parser.add_argument("--k", dest="K", type=int, help="minimum group size K")
    parser.add_argument("--C", help="maximum confidence C in (0, 1], e.g. 0.2")
    parser.add_argument(
        "--preset",
        choices=LKC_PRESETS,
        default="lkc",
        help="k-anonymity (L=|QID|, C=1), confidence-bounding (L=|QID|, K=1), "
        "alpha-k (L=|QID|, K=k, C=alpha)",
    )
    parser.add_argument(
        "--score",
        choices=LKC_SCORES,
        default=None,
        help="infogain (default with a class) or discernibility",
    )
    parser.add_argument(
        "--dynamic", type=names, help="numerical QIDs split dynamically by InfoGain: a,b"
    )
    parser.add_argument("--drop", type=names, help="ID columns removed before anything else: a,b")
    parser.add_argument("--suppress", help="record-suppression budget: share of records, e.g. 0.02")
    parser.add_argument(
        "--suppressed",
        choices=("root", "drop"),
        default="root",
        help="suppressed records: every QID at the root (default) or removed",
    )
    parser.add_argument("--delimiter", help="CSV delimiter (default ',' or tab for .tsv)")


def add_anonymize_lkc(methods: argparse._SubParsersAction) -> None:
    """Add `lkc` to the `fedanon anonymize` methods."""
    lkc = methods.add_parser("lkc", help="LKC-privacy by top-down specialization")
    lkc.add_argument("--data", required=True, help="input table (CSV with header, or Parquet)")
    add_lkc_options(lkc)
    lkc.add_argument(
        "--out", required=True, help="released table: .csv, .tsv or .parquet (written atomically)"
    )
    lkc.add_argument(
        "--out-delimiter", help="delimiter of a .csv release (default: the input's delimiter)"
    )
    lkc.add_argument("--report", help="JSON report path")
    lkc.add_argument("--json", action="store_true", help="print the report as JSON")
    lkc.add_argument("--quiet", action="store_true", help="no progress display")
    lkc.add_argument(
        "--search",
        choices=("auto", "greedy", "best-of"),
        default="auto",
        help="greedy, or, with --suppress and --score discernibility, best-of: one run per "
        "candidate order, keeping the lowest discernibility ratio (centralized only); auto "
        "(default): best-of where it applies, else greedy",
    )
    add_report_options(lkc)
    # its summary is its steward report's: inputs recorded as read (fedanon/cli/main.py)
    lkc.set_defaults(handler=run_lkc, always_reports=True)


def run_lkc(args: argparse.Namespace) -> int:
    from fedanon.algorithms.tds.api import (
        anonymize_lkc,
        build_schema,
        parse_sensitive,
        resolve_params,
    )
    from fedanon.algorithms.tds.verified import verified_release
    from fedanon.outputs import CommandOutputs
    from fedanon.readers.table_io import check_output_format, read_arrow_delimited
    from fedanon.report.build import record_release_file
    from fedanon.taxonomy.loader import load_taxonomy

    outputs = CommandOutputs(inputs=[args.data, args.taxonomy])
    outputs.claim("--out", args.out)
    outputs.claim("--report", args.report)
    outputs.claim("--html", args.html)
    check_output_format(args.out)
    # Arrow to the end: pandas never loads; the output's delimiter is the input's
    table, in_delimiter = read_arrow_delimited(args.data, args.delimiter)
    out_delimiter = args.out_delimiter or in_delimiter
    taxonomy = load_taxonomy(args.taxonomy, data_columns=table.column_names)
    drop = split_list(args.drop)
    sensitive = parse_sensitive(args.sensitive) if args.sensitive else None
    schema = build_schema(
        taxonomy,
        table,
        split_list(args.qid),
        sensitive,
        args.class_column,
        split_list(args.dynamic),
    )
    params = resolve_params(args.preset, len(schema.qids), args.L, args.K, args.C)
    score = args.score or ("infogain" if schema.class_column else "discernibility")
    with step_progress("specializing", args.quiet) as show:
        release = anonymize_lkc(
            table,
            schema,
            params,
            score,
            drop,
            on_step=lambda s: show(
                f"#{s.iteration} {s.attribute}={s.value} "
                f"({s.partitions} groups, {s.candidates} candidates)"
            ),
            suppress=args.suppress,
            suppressed_mode=args.suppressed,
            search=args.search,
        )
    # privacy_check; the engine's codes stay for the report and the writer
    release = verified_release(release, schema, params)
    report = {**release.report, "input": str(args.data), "output": str(args.out)}
    steward = lkc_release_report(
        args,
        release.table,
        "anonymize lkc",
        schema,
        params,
        score,
        check=release.report["privacy_check"],  # the check that just ran; never a second one
        original=table,
    )
    report["release_report"] = steward
    with outputs.writing() as staged:
        staged.table(args.out, release.table, out_delimiter)
        record_release_file(steward, args.out, staged.path(args.out))
        if args.report:
            staged.json(args.report, report)
        stage_html(staged, args, steward)
    groups = report["groups"]
    print_summary(
        "fedanon anonymize lkc",
        [
            ("records", report["records"]),
            ("L, K, C", f"{params.L}, {params.K}, {float(params.C):g}"),
            ("score", score),
            ("specializations", report["specializations"]),
            ("min group size (L-subsets)", groups["min_group_size"]),
            *summary_rows(steward),
            ("discernibility ratio", f"{groups['discernibility_ratio']:.6f}"),
            *(
                [
                    (
                        "suppressed records",
                        f"{report['suppression']['suppressed_records']:,} of at "
                        f"most {report['suppression']['budget_records']:,}",
                    )
                ]
                if "suppression" in report
                else []
            ),
            ("time", seconds_text(report["seconds"])),
            ("output", args.out),
        ],
        report if args.json else None,
    )
    return 0
