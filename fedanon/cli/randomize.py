"""``fedanon anonymize randomize``, ``evaluate randomization`` and ``sim randomize``.

Heavy imports (pandas, the algorithm, the federation) stay inside the handlers so that
``fedanon --help`` stays fast.
"""

from __future__ import annotations

import argparse
from typing import Any

from fedanon.cli.common import (
    add_sim_options,
    add_sum_mode_option,
    add_transport_option,
    check_ring_parties,
    names,
    per_item_numbers,
    print_summary,
    sim_federation,
    sim_outputs,
    split_list,
    step_progress,
)
from fedanon.errors import FedanonError
from fedanon.report.summary import randomization_rows


def _p_value(text: str) -> str | tuple[float, ...]:
    """--p: uniform, optimal, or one probability per QID (0.5,0.3,0.2)."""
    if text in ("uniform", "optimal"):
        return text
    try:
        return tuple(float(x) for x in per_item_numbers(text).split(","))
    except argparse.ArgumentTypeError as exc:
        raise FedanonError(
            f"--p '{text}': use uniform, optimal or numbers like 0.5,0.3,0.2 ({exc})"
        ) from None


def _method_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of the method options, for anonymize_randomize and its evaluation."""
    return {
        "qids": split_list(args.qid),
        "method": args.method,
        "attrs": args.attrs,
        "p": _p_value(args.p),
        "seed": args.seed,
    }


def _method_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="input table (CSV with header, or Parquet)")
    parser.add_argument(
        "--qid", type=names, required=True, help="QID columns a,b,c (the others are kept)"
    )
    parser.add_argument(
        "--method",
        choices=("ra", "enhanced"),
        default="ra",
        help="ra: one attribute per record w.p. p_i; enhanced: k attributes",
    )
    parser.add_argument(
        "--attrs",
        type=int,
        metavar="K",
        help="enhanced RA: attributes redrawn per record (default 2)",
    )
    parser.add_argument(
        "--p",
        default="uniform",
        metavar="uniform|optimal|p1,p2,..",
        help="RA attribute probabilities (optimal maximizes Pa)",
    )
    parser.add_argument(
        "--seed", type=int, help="seed for reproducible runs (default: secret, from the OS)"
    )
    parser.add_argument("--delimiter", help="CSV delimiter (default ',' or tab for .tsv)")


def add_anonymize_randomize(methods: argparse._SubParsersAction) -> None:
    """Add `randomize` to the `fedanon anonymize` methods."""
    parser = methods.add_parser(
        "randomize",
        help="randomization by breaking attribute links (RA, enhanced RA)",
        description="Redraw one QID value per record (RA) or k of them (enhanced RA) from the "
        "column's marginal; other columns are untouched. Reports Pa.",
    )
    _method_options(parser)
    parser.add_argument("--out", required=True, help="randomized table (written atomically)")
    parser.add_argument("--report", help="JSON report path")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(handler=run_anonymize)


def add_evaluate_randomization(kinds: argparse._SubParsersAction) -> None:
    """Add `randomization` to the `fedanon evaluate` kinds."""
    parser = kinds.add_parser(
        "randomization",
        help="Pa, bias of frequent combinations, query error of RA",
        description="Randomize --data (or read --release) and report Pa, the changed cells, "
        "predicted vs measured bias of the most frequent QID combinations and, with "
        "--sensitive-column, the average relative error of random COUNT queries.",
    )
    _method_options(parser)
    parser.add_argument(
        "--release",
        help="an existing randomized table of --data (same method and parameters; changed "
        "cells are counted row by row, so they mean something only for an unshuffled "
        "release); default: randomize here",
    )
    parser.add_argument(
        "--top", type=int, default=10, help="frequent combinations per length 2 and 3 (default 10)"
    )
    parser.add_argument(
        "--sensitive-column", dest="sensitive", help="sensitive column of the COUNT queries"
    )
    parser.add_argument("--queries", type=int, default=1000, help="COUNT queries (default 1000)")
    parser.add_argument("--qd", type=int, default=4, help="QIDs per query (default 4)")
    parser.add_argument("--s", type=float, default=0.05, help="query selectivity (default 0.05)")
    parser.add_argument(
        "--rule-support",
        type=float,
        default=0.08,
        help="association rules: minimum support (default 0.08)",
    )
    parser.add_argument(
        "--rule-confidence",
        type=float,
        default=0.15,
        help="association rules: minimum confidence (default 0.15)",
    )
    parser.add_argument("--no-rules", action="store_true", help="skip the rule recovery")
    parser.add_argument("--report", help="JSON report path")
    parser.add_argument("--chart", help="PNG: predicted vs measured bias per combination")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(handler=run_evaluate)


def add_sim_randomize(methods: argparse._SubParsersAction) -> None:
    """Add `randomize` to the `fedanon sim` methods."""
    parser = methods.add_parser(
        "randomize",
        help="federated randomization over N real party daemons on loopback",
        description="Split --data over N parties, sum their histograms securely, randomize "
        "locally, integrate by secure union; compare with a centralized run on the union.",
    )
    _method_options(parser)
    parser.add_argument("--parties", type=int, default=3, help="number of hospitals (default 3)")
    parser.add_argument("--split", default="random", help="random (default) or by-column=COL")
    parser.add_argument("--split-seed", type=int, default=1, help="seed of the random split")
    add_sum_mode_option(parser)
    parser.add_argument(
        "--keep-at-parties",
        action="store_true",
        help="no union: each party keeps its randomized table",
    )
    parser.add_argument(
        "--allow-two-parties",
        action="store_true",
        help="accept 2 parties (each learns the other's histograms)",
    )
    parser.add_argument(
        "--pad-to",
        type=int,
        default=0,
        metavar="N",
        help="pad every party's union batch to N items",
    )
    add_transport_option(parser)
    add_sim_options(
        parser,
        workdir_help="keep configs, certificates, logs and kept tables here",
        out_help="integrated release (required unless --keep-at-parties)",
        out_required=False,
    )
    parser.set_defaults(handler=run_sim)


def run_anonymize(args: argparse.Namespace) -> int:
    from fedanon.algorithms.randomization.api import anonymize_randomize
    from fedanon.outputs import CommandOutputs
    from fedanon.readers.table_io import read_table

    outputs = CommandOutputs(inputs=[args.data])
    outputs.claim("--out", args.out)
    outputs.claim("--report", args.report)
    table = read_table(args.data, args.delimiter)
    with step_progress("randomizing", args.quiet or args.json):
        release = anonymize_randomize(table, **_method_arguments(args))
    report = {**release.report, "input": str(args.data), "output": str(args.out)}
    with outputs.writing() as staged:
        staged.table(args.out, release.table)
        if args.report:
            staged.json(args.report, report)
    rows = randomization_rows(report)
    rows += [
        ("changed cells", f"{report['changed_cell_fraction']:.4%}"),
        ("seconds", report["seconds"]),
        ("output", args.out),
    ]
    print_summary("fedanon anonymize randomize", rows, report if args.json else None)
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    from fedanon.algorithms.randomization.api import evaluate_randomization
    from fedanon.outputs import CommandOutputs
    from fedanon.readers.table_io import read_table

    outputs = CommandOutputs(inputs=[args.data, args.release])
    outputs.claim("--report", args.report)
    outputs.claim("--chart", args.chart)
    table = read_table(args.data, args.delimiter)
    release = read_table(args.release, args.delimiter) if args.release else None
    with step_progress("evaluating", args.quiet or args.json):
        report = evaluate_randomization(
            table,
            **_method_arguments(args),
            release=release,
            top=args.top,
            sensitive_column=args.sensitive,
            queries=args.queries,
            qd=args.qd,
            s=args.s,
        )
    report = {**report, "input": str(args.data), "release": args.release}
    with outputs.writing() as staged:
        if args.report:
            staged.json(args.report, report)
        if args.chart:
            from fedanon.utility.randomization_chart import plot_bias

            plot_bias(report, staged.path(args.chart))
    rows = randomization_rows(report)
    rows.append(("changed cells", f"{report['changed_cell_fraction']:.4%}"))
    rows += [
        (
            b["combination"],
            f"support {b['support']:.4f}: bias predicted "
            f"{b['predicted_bias']:+.4f} (sd {b['predicted_sd']:.4f}), measured "
            f"{b['measured_bias']:+.4f}",
        )
        for b in report["bias"]
    ]
    if "count_queries" in report:
        queries = report["count_queries"]
        rows.append(
            (
                f"COUNT query error ({queries['queries']} queries, qd={queries['qd']}, "
                f"s={queries['s']})",
                f"{queries['average_relative_error']:.4f}",
            )
        )
    if "rules" in report:
        found = report["rules"]
        rows.append(
            (
                f"rules recovered (support {found['min_support']}, confidence "
                f"{found['min_confidence']})",
                f"{found['recovered']} of {found['rules_original']} "
                f"({found['recovery']}), {found['artificial']} artificial",
            )
        )
    print_summary("fedanon evaluate randomization", rows, report if args.json else None)
    return 0


def run_sim(args: argparse.Namespace) -> int:
    """Split, run the federation, and compare its plan with the centralized one on the union."""
    import numpy as np

    from fedanon.algorithms.randomization.api import anonymize_randomize
    from fedanon.algorithms.randomization.coding import encode, observed_domain
    from fedanon.algorithms.randomization.jobspec import RandomizeSpec
    from fedanon.leader.kinds.randomize import RandomizeLeaderJob, run_randomize
    from fedanon.leader.sim import split_table
    from fedanon.readers.table_io import read_table

    if args.keep_at_parties and not args.workdir:
        raise FedanonError(
            "--keep-at-parties needs --workdir: each party writes its randomized "
            "table into <workdir>/<party>-out"
        )
    if not args.keep_at_parties and not args.out:
        raise FedanonError("--out is required unless --keep-at-parties")
    check_ring_parties(args.parties, args.allow_two_parties)
    # With --keep-at-parties no release is written: --out is not claimed.
    claims = ("--report",) if args.keep_at_parties else ("--out", "--report")
    outputs = sim_outputs(args, [args.data], claims)
    table = read_table(args.data, args.delimiter)
    qids = split_list(args.qid)
    coded = encode(table, qids)
    # The simulation knows the union, so it can fix the agreed domains from it; a real
    # federation writes them into job.toml from a public code book.
    spec = RandomizeSpec(
        tuple(qids),
        tuple(observed_domain(table[q]) for q in qids),
        args.method,
        args.attrs,
        _p_value(args.p),
        args.keep_at_parties,
    )
    central = anonymize_randomize(table, **_method_arguments(args))
    parts = split_table(table, args.parties, args.split, args.split_seed)
    plans: list[Any] = []
    with outputs.writing() as staged:
        # The leader writes the release into the staged temporary; it and the report are
        # renamed onto their targets together once both are complete.
        out = staged.path(args.out) if args.out and not args.keep_at_parties else None
        with (
            step_progress("federated randomization", args.quiet or args.json) as show,
            sim_federation(args, parts, None, show) as fed,
        ):
            job = RandomizeLeaderJob(
                fed.hops,
                fed.leader_tls,
                spec,
                out,
                report=None,
                sum_mode=args.sum_mode or RandomizeLeaderJob.sum_mode,  # unset: the kind's
                allow_two_parties=args.allow_two_parties,
                union_pad_to=args.pad_to,
                relay_listen=fed.relay_listen,
            )
            show.phase("run: secure sums of the histograms, randomization at the parties")
            report = run_randomize(job, on_plan=plans.append)
            show.phase("run: done")
        if out is not None:
            report["output"] = str(args.out)
        exact = all(
            np.array_equal(a, b)
            for a, b in zip(plans[0].marginals, coded.histograms(), strict=True)
        )
        report["centralized"] = {
            "Pa": central.report["Pa"],
            "p": central.report["p"],
            "seconds": central.report["seconds"],
            "global_marginals_equal_union_marginals": exact,
        }
        if args.report:
            staged.json(args.report, report)
    rows = [
        ("parties", ", ".join(report["parties"])),
        ("sum mode", report["sum_mode"]),
        *randomization_rows(report),
        ("Pa of the centralized run", central.report["Pa"]),
        ("global marginals == union marginals", exact),
        ("seconds", report["seconds"]),
        ("output", report["output"] or "kept at the parties"),
    ]
    print_summary("fedanon sim randomize", rows, report if args.json else None)
    return 0
