"""``fedanon evaluate lkc`` and ``evaluate lkc-sweep``: utility of LKC releases (CE, BE, UE, DR)
as JSON and a PNG chart. The `evaluate` group (cli/evaluate.py) calls `add_evaluate_lkc`."""

from __future__ import annotations

import argparse

from fedanon.cli.choices import LKC_SCORES
from fedanon.cli.common import (
    add_evaluation_options,
    int_list,
    ints,
    names,
    print_summary,
    split_list,
    step_progress,
)
from fedanon.cli.reporting import evaluation_rows
from fedanon.errors import FedanonError


def add_evaluate_lkc(kinds: argparse._SubParsersAction) -> None:
    """Add `lkc` and `lkc-sweep` to the `fedanon evaluate` kinds."""
    one = kinds.add_parser("lkc", help="CE/BE/UE/DR of one LKC release")
    one.add_argument("--data", required=True, help="the raw table (training rows first)")
    one.add_argument(
        "--release",
        required=True,
        help="its release, rows in any order (paired with the raw rows by their "
        "generalization; what cannot be paired is refused)",
    )
    one.add_argument(
        "--train-rows",
        type=int,
        required=True,
        help="the first N rows train the classifier, the rest test it",
    )
    add_evaluation_options(one)
    one.add_argument("--report", help="JSON report path")
    one.add_argument("--json", action="store_true", help="print the report as JSON")
    one.add_argument("--quiet", action="store_true", help="no progress display")
    one.set_defaults(handler=run_one)

    grid = kinds.add_parser("lkc-sweep", help="the paper's protocol over a grid of L and K")
    grid.add_argument("--data", required=True, help="the raw table (training rows first)")
    grid.add_argument(
        "--taxonomy", required=True, help="gives QIDs, sensitive values, numeric QIDs and the class"
    )
    grid.add_argument(
        "--train-rows",
        type=int,
        required=True,
        help="the first N rows train the classifier, the rest test it",
    )
    grid.add_argument("--L", type=ints, default="2,4,6", help="values of L, comma-separated")
    grid.add_argument(
        "--k", dest="K", type=ints, default="20,40,60,80,100", help="values of K, comma-separated"
    )
    grid.add_argument("--C", default="0.2", help="maximum confidence C in (0, 1]")
    grid.add_argument(
        "--score", choices=LKC_SCORES, default="infogain", help="specialization score"
    )
    grid.add_argument(
        "--dynamic", type=names, help="numerical QIDs split dynamically: a,b (or 'all')"
    )
    grid.add_argument("--delimiter", help="CSV delimiter (default ',' or tab for .tsv)")
    grid.add_argument("--out-dir", required=True, help="sweep.json and sweep.png go here")
    grid.add_argument("--json", action="store_true", help="print the rows as JSON")
    grid.add_argument("--quiet", action="store_true", help="no progress display")
    grid.set_defaults(handler=run_sweep)


def _schema_maker(args: argparse.Namespace, table):
    from fedanon.algorithms.tds.api import build_schema
    from fedanon.taxonomy.loader import load_taxonomy

    def make():
        taxonomy = load_taxonomy(args.taxonomy, data_columns=list(table.columns))
        dynamic = split_list(getattr(args, "dynamic", None))
        if dynamic == ["all"]:
            dynamic = [a for a, t in taxonomy.taxonomies.items() if t.kind == "numeric"]
        qids = split_list(getattr(args, "qid", None))
        return build_schema(
            taxonomy, table, qids, None, getattr(args, "class_column", None), dynamic
        )

    return make


def run_one(args: argparse.Namespace) -> int:
    from fedanon.algorithms.tds.sweep import numeric_view
    from fedanon.outputs import CommandOutputs
    from fedanon.readers.table_io import read_table, require_columns
    from fedanon.utility.evaluation import evaluate_release
    from fedanon.utility.pairing import release_in_raw_order

    outputs = CommandOutputs(inputs=[args.data, args.release, args.taxonomy])
    outputs.claim("--report", args.report)
    raw = read_table(args.data, args.delimiter)
    release = read_table(args.release, args.delimiter)
    schema = _schema_maker(args, raw)()
    if schema.class_column is None:
        raise FedanonError("no class column (--class)")
    require_columns(release, [*schema.qids, schema.class_column], args.release)
    release = release_in_raw_order(raw, release, schema.taxonomies, args.release)
    if not 0 < args.train_rows < len(raw):
        raise FedanonError(f"--train-rows must be between 1 and {len(raw) - 1}")
    numeric = [t.attribute for t in schema.taxonomies if t.kind == "numeric"]
    rawn = numeric_view(raw, numeric)
    n = args.train_rows
    with step_progress("evaluating", args.quiet or args.json):
        result = evaluate_release(
            rawn.iloc[:n],
            rawn.iloc[n:],
            release.iloc[:n],
            release.iloc[n:],
            schema.class_column,
            schema.qids,
            numeric,
        )
    with outputs.writing() as staged:
        if args.report:
            staged.json(args.report, result)
    print_summary("fedanon evaluate lkc", evaluation_rows(result), result if args.json else None)
    return 0


def run_sweep(args: argparse.Namespace) -> int:
    from fedanon.algorithms.tds.sweep import sweep
    from fedanon.outputs import CommandOutputs
    from fedanon.readers.table_io import read_table
    from fedanon.utility.charts import plot_sweep

    outputs = CommandOutputs(inputs=[args.data, args.taxonomy])
    out = outputs.claim_directory("--out-dir", args.out_dir)
    outputs.claim("--out-dir", out / "sweep.json")
    outputs.claim("--out-dir", out / "sweep.png")
    Ls = int_list(args.L, "--L")
    Ks = int_list(args.K, "--k")
    table = read_table(args.data, args.delimiter)
    with step_progress("evaluating", args.quiet) as show:
        rows = sweep(
            table,
            _schema_maker(args, table),
            Ls,
            Ks,
            args.C,
            args.train_rows,
            args.score,
            on_row=lambda r: show.phase(
                f"L={r['L']} K={r['K']}: CE {r['CE']:.2f}% DR {r['DR']:.4f}"
            ),
        )
    with outputs.writing() as staged:
        staged.json(out / "sweep.json", rows)
        plot_sweep(rows, staged.path(out / "sweep.png"))
    summary = [
        (
            f"L={r['L']} K={r['K']}",
            f"CE {r['CE']:.2f}%  BE {r['BE']:.2f}%  UE {r['UE']:.2f}%  DR {r['DR']:.4f}"
            f"  check {'ok' if r.get('checker_ok') else 'FAILED'}",
        )
        for r in rows
    ]
    print_summary("fedanon evaluate lkc-sweep", summary, {"rows": rows} if args.json else None)
    return 0
