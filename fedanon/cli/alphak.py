"""`fedanon anonymize alpha-k`, `fedanon check alpha-k` and `fedanon evaluate queries`.

The command groups belong to their own modules; they call the ``add_*`` functions here. Heavy
imports happen inside the handlers so that ``fedanon --help`` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fedanon.cli.common import ints, names, numbers, print_summary, split_list, step_progress
from fedanon.cli.reporting import (
    add_report_options,
    alpha_k_release_report,
    stage_html,
    wants_report,
)
from fedanon.errors import FedanonError

PAIR_METHODS = ("lossy-join", "anatomy")


def _add_columns(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--qid", type=names, required=True, help="QID columns a,b,c")
    parser.add_argument(
        "--sensitive-column",
        dest="sensitive",
        required=True,
        metavar="COL",
        help="sensitive column",
    )
    parser.add_argument("--delimiter", help="CSV delimiter (default ',' or tab for .tsv)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def add_anonymize_alpha_k(methods: argparse._SubParsersAction) -> None:
    """Add `alpha-k` to the `fedanon anonymize` methods."""
    parser = methods.add_parser(
        "alpha-k",
        help="(alpha,k)-anonymity: global/local recoding, lossy join, Anatomy",
        description="Every class has >= k records and no sensitive value above alpha of it. "
        "global and local write one generalized table (--out); lossy-join and anatomy write "
        "NSS (raw QIDs + ClassID) and SS (ClassID + sensitive value) with a reading note.",
    )
    parser.add_argument("--data", required=True, help="input table (CSV with header, or Parquet)")
    _add_columns(parser)
    parser.add_argument("--alpha", default="0.33", help="max share of a value, in (0, 1]")
    parser.add_argument("--k", type=int, default=2, help="minimum class size (default 2)")
    parser.add_argument(
        "--method",
        choices=("global", "local", *PAIR_METHODS),
        default="local",
        help="global or local recoding (one table), or a lossy-join / anatomy NSS+SS pair",
    )
    parser.add_argument("--taxonomy", help="QID taxonomies: .toml, .hchy or ARX csv dir")
    parser.add_argument("--seed", type=int, help="reproducible run (default: secret random)")
    parser.add_argument("--out", help="generalized table (global, local)")
    parser.add_argument("--nss", help="NSS table (lossy-join, anatomy)")
    parser.add_argument("--ss", help="SS table (lossy-join, anatomy)")
    parser.add_argument("--report", help="JSON report path")
    add_report_options(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(handler=run_anonymize)


def add_check_alpha_k(models: argparse._SubParsersAction) -> None:
    """Add `alpha-k` to the `fedanon check` models."""
    parser = models.add_parser(
        "alpha-k",
        help="(alpha,k)-anonymity of a generalized table or an NSS/SS pair",
        description="Classes are rows with equal released QIDs (--data) or with one ClassID "
        "(--nss/--ss). Exit status: 0 if every class has >= k rows and no value above alpha, "
        "1 if not, 2 for input errors.",
    )
    parser.add_argument("--data", help="generalized table")
    parser.add_argument("--nss", help="NSS table")
    parser.add_argument("--ss", help="SS table")
    parser.add_argument("--qid", type=names, help="QID columns a,b,c (needed with --data)")
    parser.add_argument(
        "--sensitive-column",
        dest="sensitive",
        required=True,
        metavar="COL",
        help="sensitive column",
    )
    parser.add_argument("--alpha", required=True, help="max share: 0.33 or 1/3")
    parser.add_argument("--k", type=int, required=True, help="minimum class size")
    parser.add_argument("--delimiter", help="CSV delimiter (default ',' or tab for .tsv)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=run_check)


def add_evaluate_queries(kinds: argparse._SubParsersAction) -> None:
    """Add `queries` to the `fedanon evaluate` kinds."""
    parser = kinds.add_parser(
        "queries",
        help="average relative error of random COUNT queries on releases",
        description="Draw COUNT queries over qd random QIDs and the sensitive column with "
        "b = ceil(|dom| * s^(1/(qd+1))) values per predicate (empty queries redrawn) and "
        "report |act - est| / act on every release. Name releases NAME=PATH.",
    )
    parser.add_argument("--data", required=True, help="the raw table")
    _add_columns(parser)
    parser.add_argument(
        "--release",
        action="append",
        default=[],
        metavar="[NAME=]PATH",
        help="generalized (or directly queried) table; repeatable",
    )
    parser.add_argument(
        "--nss",
        action="append",
        default=[],
        metavar="[NAME=]PATH",
        help="NSS table; repeatable, paired with --ss in order",
    )
    parser.add_argument("--ss", action="append", default=[], metavar="PATH", help="SS table")
    parser.add_argument("--taxonomy", help="taxonomy naming the generalized values")
    parser.add_argument("--qd", type=int, default=4, help="QIDs per query (default 4)")
    parser.add_argument("--s", type=float, default=0.05, help="selectivity (default 0.05)")
    parser.add_argument("--queries", type=int, default=1000, help="queries (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
    parser.add_argument("--qd-values", type=ints, help="qd sweep for the chart, e.g. 1,2,3,4,5")
    parser.add_argument(
        "--s-values", type=numbers, help="s sweep for the chart, e.g. 0.01,0.05,0.1"
    )
    parser.add_argument("--report", help="JSON report path")
    parser.add_argument("--chart", help="PNG: error against qd and against s")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(handler=run_evaluate)


# ---------------------------------------------------------------------- handlers
def run_anonymize(args: argparse.Namespace) -> int:
    from fedanon.algorithms.alphak.api import anonymize_alpha_k
    from fedanon.algorithms.alphak.release import NOTE, note_path
    from fedanon.outputs import CommandOutputs
    from fedanon.readers.table_io import read_table
    from fedanon.report.build import record_release_file
    from fedanon.taxonomy.loader import load_taxonomy

    pair = args.method in PAIR_METHODS
    if pair and (not args.nss or not args.ss or args.out):
        raise FedanonError(f"--method {args.method} writes two tables: give --nss and --ss")
    if not pair and (not args.out or args.nss or args.ss):
        raise FedanonError(f"--method {args.method} writes one table: give --out")
    if pair and args.html:
        raise FedanonError(
            f"--html describes one generalized table; --method {args.method} writes a pair"
        )
    outputs = CommandOutputs(inputs=[args.data, args.taxonomy])
    outputs.claim("--out", args.out)
    outputs.claim("--nss", args.nss)
    outputs.claim("--ss", args.ss)
    note = outputs.claim("--nss reading note", note_path(args.nss) if pair else None)
    outputs.claim("--report", args.report)
    outputs.claim("--html", args.html)
    table = read_table(args.data, args.delimiter)
    taxonomy = (
        load_taxonomy(args.taxonomy, data_columns=list(table.columns)) if args.taxonomy else None
    )
    qids = split_list(args.qid)
    with step_progress(f"alpha-k ({args.method})", args.quiet or args.json):
        release = anonymize_alpha_k(
            table, qids=qids, sensitive_column=args.sensitive, alpha=args.alpha, k=args.k,
            method=args.method, taxonomy=taxonomy, seed=args.seed,
        )  # fmt: skip
    report = {**release.report, "input": str(args.data)}
    with outputs.writing() as staged:
        if not pair:
            staged.table(args.out, release.table)
            report["output"] = str(args.out)
            if wants_report(args):
                report["release_report"] = steward = alpha_k_release_report(
                    args,
                    release.table,
                    taxonomy,
                    args.method,
                    release.report["privacy_check"],
                    table,
                )
                record_release_file(steward, args.out, staged.path(args.out))
        else:
            nss, ss = release.tables["nss"], release.tables["ss"]
            assert note is not None  # claimed above for every pair method
            staged.table(args.nss, nss)
            staged.table(args.ss, ss)
            staged.path(note).write_text(
                NOTE.format(
                    cls="ClassID",
                    nss=Path(args.nss).name,
                    ss=Path(args.ss).name,
                    qids=", ".join(qids),
                    sensitive=args.sensitive,
                    rows=report["rows"],
                    k=report["k"],
                    alpha=report["alpha_float"],
                ),
                encoding="utf-8",
            )
            report["output"] = {"nss": str(args.nss), "ss": str(args.ss)}
        if args.report:
            staged.json(args.report, report)
        stage_html(staged, args, report.get("release_report", {}))
    print_summary(
        f"fedanon anonymize alpha-k ({args.method})",
        [
            ("records", report["rows"]),
            ("alpha, k", f"{report['alpha_float']:g}, {report['k']}"),
            ("classes", report["classes"]),
            ("min class size", report["min_class_size"]),
            ("max share", report["max_share"]),
            ("information loss", report["information_loss"]),
            ("seed", report["seed"]),
            ("seconds", report["seconds"]),
            ("output", report["output"]),
        ],
        report if args.json else None,
    )
    return 0


def run_check(args: argparse.Namespace) -> int:
    from fedanon.models.alpha_k import check_generalized, check_pair
    from fedanon.readers.table_io import read_table

    if args.data and (args.nss or args.ss):
        raise FedanonError("give either --data or --nss and --ss, not both")
    if args.data:
        qids = split_list(args.qid)
        if not qids:
            raise FedanonError("--data needs --qid (the columns that form the classes)")
        result = check_generalized(
            read_table(args.data, args.delimiter), qids, args.sensitive, args.alpha, args.k
        )
    elif args.nss and args.ss:
        result = check_pair(
            read_table(args.nss, args.delimiter),
            read_table(args.ss, args.delimiter),
            args.sensitive,
            args.alpha,
            args.k,
        )
    else:
        raise FedanonError("give --data (generalized table) or --nss and --ss (a pair)")
    report = result.to_dict()
    rows: list[tuple[str, object]] = [
        ("verdict", "(alpha,k) holds" if result.ok else "VIOLATED"),
        ("alpha, k", f"{float(result.alpha):g}, {result.k}"),
        ("rows", result.rows),
        ("classes", result.classes),
        ("min class size", result.min_class_size),
        ("max share", f"{result.max_share} = {float(result.max_share):.4f}"),
        ("violating classes", result.violations),
    ]
    if result.first_violation:
        rows.append(("first violation", result.first_violation))
    print_summary("fedanon check alpha-k", rows, report if args.json else None)
    return 0 if result.ok else 1


def _named(spec: str) -> tuple[str, str]:
    """``NAME=PATH`` or ``PATH`` (named after the file)."""
    name, sep, path = spec.partition("=")
    if sep and name and path:
        return name, path
    return Path(spec).stem, spec


def run_evaluate(args: argparse.Namespace) -> int:
    from fedanon.algorithms.alphak.query_report import (
        QueryRelease,
        evaluate_queries,
        plot_query_errors,
    )
    from fedanon.outputs import CommandOutputs
    from fedanon.readers.table_io import read_table

    if len(args.nss) != len(args.ss):
        raise FedanonError(f"{len(args.nss)} --nss but {len(args.ss)} --ss: give them in pairs")
    named = [_named(spec)[1] for spec in [*args.release, *args.nss]]
    outputs = CommandOutputs(inputs=[args.data, args.taxonomy, *named, *args.ss])
    outputs.claim("--report", args.report)
    outputs.claim("--chart", args.chart)
    raw = read_table(args.data, args.delimiter)
    releases = []
    for spec in args.release:
        name, path = _named(spec)
        releases.append(QueryRelease(name, table=read_table(path, args.delimiter)))
    for nss_spec, ss_path in zip(args.nss, args.ss, strict=True):
        name, nss_path = _named(nss_spec)
        releases.append(
            QueryRelease(
                name,
                nss=read_table(nss_path, args.delimiter),
                ss=read_table(ss_path, args.delimiter),
            )
        )
    try:
        qd_values = [int(x) for x in split_list(args.qd_values)]
        s_values = [float(x) for x in split_list(args.s_values)]
    except ValueError:
        raise FedanonError("--qd-values and --s-values take comma-separated numbers") from None
    with step_progress("answering COUNT queries", args.quiet or args.json):
        report = evaluate_queries(
            raw,
            releases=releases,
            qids=split_list(args.qid),
            sensitive_column=args.sensitive,
            qd=args.qd,
            s=args.s,
            queries=args.queries,
            seed=args.seed,
            taxonomy=args.taxonomy,
            qd_values=qd_values,
            s_values=s_values,
        )
    with outputs.writing() as staged:
        if args.report:
            staged.json(args.report, report)
        if args.chart:
            plot_query_errors(report, staged.path(args.chart))
    default = report["default"]
    rows = [("qd, s, queries", f"{args.qd}, {args.s:g}, {args.queries}")]
    rows += [
        (name, f"{default[name]['average_relative_error']:.4f}") for name in report["releases"]
    ]
    print_summary("fedanon evaluate queries", rows, report if args.json else None)
    return 0
