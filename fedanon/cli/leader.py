"""``fedanon leader run --config job.toml``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from fedanon.cli.common import print_summary, step_progress
from fedanon.cli.reporting import add_report_options, claim_html, finish_distributed_reports

if TYPE_CHECKING:
    from fedanon.leader.kind import LeaderJob


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


def run_leader(args: argparse.Namespace) -> int:
    """Load job.toml, run its kind's job, print the kind's summary: the leader's registry of
    job kinds (fedanon.leader.kinds) says everything that differs between kinds."""
    from fedanon.leader.config import load_job

    job = load_job(args.config)
    try:
        return _run_loaded(args, job)
    finally:
        if job.relay_listen is not None:  # its streams would hold the process open
            from fedanon.leader.relay import stop_relay

            stop_relay(job.relay_listen)


def _run_loaded(args: argparse.Namespace, job: LeaderJob) -> int:
    """Run the loaded `job` (any kind) as ``leader run`` does."""
    from fedanon.federation.tls import insecure_warning
    from fedanon.leader.kind import Progress
    from fedanon.leader.kinds import LEADER_KINDS

    if args.insecure:
        print(insecure_warning("--insecure"), file=sys.stderr)
        job.tls = None
    elif job.tls is None:
        print(insecure_warning(f"{args.config} [tls] insecure = true"), file=sys.stderr)
    kind = LEADER_KINDS[job.kind]
    if kind.steward_report:
        claim_html(args, [args.config, job.out])
        with step_progress(kind.title, args.quiet) as show:
            report = kind.run(job, Progress(phase=show.phase, step=show))
        finish_distributed_reports(args, job, report, "leader run")
    else:
        report = kind.run(job, Progress())
    print_summary(f"fedanon {kind.title}", kind.summary(report), report if args.json else None)
    return 0
