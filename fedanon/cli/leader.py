"""``fedanon leader run --config job.toml``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from fedanon.cli.common import print_summary, step_progress
from fedanon.cli.reporting import (
    add_report_options,
    claim_html,
    finish_distributed_reports,
    seconds_text,
    summary_rows,
)

if TYPE_CHECKING:
    from fedanon.algorithms.tds.engine import StepInfo
    from fedanon.leader.config import LeaderJob as _LKCJob
    from fedanon.leader.drbt import DRBTLeaderJob as _DRBTJob
    from fedanon.leader.randomize import RandomizeLeaderJob


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("leader", help="coordinate a distributed anonymization")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    run = actions.add_parser("run", help="run one session over the parties of job.toml")
    run.add_argument("--config", required=True, help="job.toml")
    run.add_argument(
        "--insecure", action="store_true", help="no TLS (local experiments only; overrides [tls])"
    )
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    run.add_argument("--quiet", action="store_true", help="no progress display")
    add_report_options(run)
    run.set_defaults(handler=run_leader)


def progress_text(step: StepInfo) -> str:
    return (
        f"iteration {step.iteration}: Best {step.attribute}={step.value} "
        f"(score {step.score:.4g}), min group {step.min_group_size}, "
        f"{step.partitions} groups"
    )


def summarize(report: dict, as_json: bool) -> None:
    groups = report["groups"]
    print_summary(
        "fedanon distributed LKC",
        [
            ("parties", ", ".join(report["parties"])),
            ("records", report["records"]),
            ("iterations", report["iterations"]),
            ("min group size (L-subsets)", groups["min_group_size"]),
            *summary_rows(report["release_report"]),
            *(
                [("suppressed records", f"{report['suppression']['suppressed_records']:,}")]
                if "suppression" in report
                else []
            ),
            ("time", seconds_text(report["seconds"])),
            ("output", report["output"]),
        ],
        report if as_json else None,
    )


def run_leader(args: argparse.Namespace) -> int:
    from fedanon.leader.config import load_job

    job = load_job(args.config)
    try:
        return _run_loaded(args, job)
    finally:
        if job.relay_listen is not None:  # its streams would hold the process open
            from fedanon.leader.relay import stop_relay

            stop_relay(job.relay_listen)


def _run_loaded(args: argparse.Namespace, job: _LKCJob | _DRBTJob | RandomizeLeaderJob) -> int:
    """Run the loaded `job` (any kind) as ``leader run`` does."""
    from fedanon.federation.tls import insecure_warning
    from fedanon.leader.config import LeaderJob
    from fedanon.leader.drbt import DRBTLeaderJob, run_drbt
    from fedanon.leader.run import run_job

    if args.insecure:
        print(insecure_warning("--insecure"), file=sys.stderr)
        job.tls = None
    elif job.tls is None:
        print(insecure_warning(f"{args.config} [tls] insecure = true"), file=sys.stderr)
    if not isinstance(job, DRBTLeaderJob | LeaderJob):
        from fedanon.cli.randomize import run_leader_randomize

        return run_leader_randomize(job, args.json)
    if isinstance(job, DRBTLeaderJob):
        report = run_drbt(job)
        rows = [
            ("parties", ", ".join(report["parties"])),
            ("objects", report["objects"]),
            ("dimensions", report["dimensions"]),
            ("cluster sizes", report["cluster_sizes"]),
            ("seconds", report["seconds"]),
            ("output", report["output"]),
        ]
        print_summary("fedanon vertical DRBT", rows, report if args.json else None)
        return 0
    claim_html(args, [args.config, job.out])
    with step_progress("distributed LKC", args.quiet) as show:
        report = run_job(job, on_step=lambda s: show(progress_text(s)), on_phase=show.phase)
    finish_distributed_reports(args, job, report, "leader run")
    summarize(report, args.json)
    return 0
