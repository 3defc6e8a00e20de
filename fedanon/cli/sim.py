"""``fedanon sim lkc``: a distributed LKC run over N real party daemons on loopback."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fedanon.cli.anonymize import add_lkc_options
from fedanon.cli.common import split_list, step_progress
from fedanon.cli.leader import progress_text, summarize
from fedanon.errors import FedanonError
from fedanon.lkc.api import parse_sensitive
from fedanon.table_io import read_table
from fedanon.taxonomy.loader import load_taxonomy


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("sim", help="simulated federation: N party daemons + leader")
    methods = parser.add_subparsers(dest="method", required=True, metavar="METHOD")
    lkc = methods.add_parser("lkc", help="distributed LKC-privacy over real daemons on loopback")
    lkc.add_argument("--parties", type=int, default=3, help="number of hospitals (default 3)")
    lkc.add_argument("--data", required=True, help="the table to split over the parties")
    lkc.add_argument("--split", default="random", help="random (default) or by-column=COL")
    lkc.add_argument("--seed", type=int, default=1, help="seed of the random split")
    add_lkc_options(lkc)
    lkc.add_argument("--sum-mode", choices=("ring", "pairwise"), default="ring")
    lkc.add_argument("--allow-two-parties", action="store_true",
                     help="accept 2 parties (each learns the other's counts from the sums)")
    lkc.add_argument("--insecure", action="store_true", help="no TLS (local experiments only)")
    lkc.add_argument("--workdir", help="keep configs, certificates and logs here")
    lkc.add_argument("--out", required=True, help="integrated release (written atomically)")
    lkc.add_argument("--report", help="JSON report path")
    lkc.add_argument("--json", action="store_true", help="print the report as JSON")
    lkc.add_argument("--quiet", action="store_true", help="no progress display")
    lkc.set_defaults(handler=run_sim_lkc)


def lkc_section(args: argparse.Namespace) -> dict:
    """The CLI's LKC options in the shape of job.toml's [lkc] section."""
    section: dict = {"L": args.L, "K": args.K, "C": args.C, "preset": args.preset,
                     "score": args.score, "drop": split_list(args.drop)}
    if args.qid:
        section["qids"] = split_list(args.qid)
    if args.sensitive:
        grouped: dict[str, list[str]] = {}
        for s in parse_sensitive(args.sensitive):
            grouped.setdefault(s.column, []).append(s.value)
        section["sensitive"] = grouped
    if args.class_column:
        section["class"] = args.class_column
    return section


def run_sim_lkc(args: argparse.Namespace) -> int:
    from leader.config import LeaderJob, spec_from_table
    from leader.run import run_job
    from leader.sim import federation, split_table

    if args.dynamic:
        raise FedanonError("--dynamic is not available in distributed mode")
    if args.insecure:
        print("fedanon: WARNING: --insecure: no TLS, no authentication; local experiments only",
              file=sys.stderr)
    table = read_table(args.data, args.delimiter)
    taxonomy = load_taxonomy(args.taxonomy, data_columns=list(table.columns))
    spec = spec_from_table(lkc_section(args), taxonomy, "options")
    if spec.class_column and not spec.class_values:
        values = sorted(table[spec.class_column].astype(str).unique())
        spec = type(spec)(**{**spec.__dict__, "class_values": values})
    parts = split_table(table, args.parties, args.split, args.seed)
    with federation(parts, Path(args.taxonomy), secure=not args.insecure,
                    workdir=Path(args.workdir) if args.workdir else None) as fed:
        job = LeaderJob(name="leader", taxonomy=taxonomy, spec=spec, parties=fed.hops,
                        tls=fed.leader_tls, out=Path(args.out),
                        report=Path(args.report) if args.report else None,
                        sum_mode=args.sum_mode, allow_two_parties=args.allow_two_parties)
        with step_progress("distributed LKC", args.quiet) as show:
            report = run_job(job, on_step=lambda s: show(progress_text(s)))
    summarize(report, args.json)
    return 0
