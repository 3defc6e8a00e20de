"""A session's fixed cost at N parties: the handshake of a ring job, step by step (#28).

N real party daemons on loopback (mutual TLS, ``fedanon.leader.sim.federation``); the leader
opens an LKC session ``--repeat`` times (after one untimed warm-up) exactly as a job does
(leader/ring.py ``open_ring``: OpenSession to every party, the union and pairwise-sum key
shares verified and shared, ShareKeys to every party), then ends it. Printed per run: the wall
seconds of each step (OpenSession fan-out, the leader's key checks, ShareKeys fan-out, End) and
the CPU seconds of the leader process and of the daemons (with their workers), the median of
the runs in the table. Two kinds of session alternate: ``job`` (a new job: the session dials
every party) and ``rerun`` (a session over the channels an earlier session of the same job
opened, as an exclusion rerun does since #28 session 11; on code without
``leader.session.Channels`` it dials again, as a rerun did there). ``first`` is the first
session the daemons (and the leader process) ever served, printed apart: certificates not yet
checked, connections not yet made.

    .venv/bin/python bench/bench_handshake.py --parties 3,10,20 --repeat 5

The data is read from FEDANON_DATA_DIR (``adult/adult_all.csv``, ``adult/lkc_paper_taxonomy.hchy``).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from pathlib import Path
from typing import Any
from unittest import mock

from bench_distributed import machine
from measure import adult_arguments, adult_lkc_job, markdown_table, tree_cpu

from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.leader.ring import open_ring
from fedanon.leader.session import Session
from fedanon.leader.sim import federation, split_table
from fedanon.protos import fedanon_v1_pb2 as pb

CHANNELS: Any = None  # the code before #28 session 11 has none: every session dials again
with contextlib.suppress(ImportError):
    from fedanon.leader.session import Channels

    CHANNELS = Channels

STEPS = ("open", "keys", "share", "end")


def one_session(
    fed: Any, job: Any, items: list[str], proto: Any, channels: Any = None
) -> dict[str, float]:
    """One session opened and ended; wall per step, the leader's and the daemons' CPU."""
    marks: list[tuple[str, float]] = []
    handshake = Session.handshake
    exchange_fan_out = Session.fan_out

    def timed_handshake(self: Session, *args: Any) -> Any:
        out = handshake(self, *args)
        marks.append(("open", time.perf_counter()))
        return out

    def timed_fan_out(self: Session, phase: str, *args: Any, **kwargs: Any) -> Any:
        if phase == "key sharing":
            marks.append(("keys", time.perf_counter()))
        return exchange_fan_out(self, phase, *args, **kwargs)

    pids = [d.process.pid for d in fed.daemons if d.process is not None]
    daemons_before = sum(tree_cpu(pid) for pid in pids)
    leader_before = time.process_time()
    began = time.perf_counter()
    with (
        mock.patch.object(Session, "handshake", timed_handshake),
        mock.patch.object(Session, "fan_out", timed_fan_out),
    ):
        session = Session(job) if channels is None else Session(job, None, channels)
        with session:
            open_ring(
                session,
                items,
                pb.OpenSessionRequest(lkc=proto),
                job.sum_mode,
                prepare_union=job.union_mode == "layered",
                pad_to=job.union_pad_to,
            )
            marks.append(("share", time.perf_counter()))
            session.end()
            marks.append(("end", time.perf_counter()))
    out: dict[str, float] = {}
    last = began
    for step, at in marks:
        out[step] = at - last
        last = at
    out["wall"] = last - began
    out["leader CPU"] = time.process_time() - leader_before
    out["daemons CPU"] = sum(tree_cpu(pid) for pid in pids) - daemons_before
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", default="3,10,20", help="comma-separated federation sizes")
    parser.add_argument("--repeat", type=int, default=5, help="sessions per size")
    parser.add_argument("--sum-mode", default="pairwise", choices=("ring", "pairwise", "sparse"))
    parser.add_argument("--union-mode", default="shuffle", choices=("layered", "shuffle"))
    adult_arguments(parser, rows=2000)
    args = parser.parse_args(argv)
    print(machine())
    table, taxonomy, spec = adult_lkc_job(args)
    schema = spec.schema(taxonomy)
    items = spec.fingerprint_items(schema)
    proto = lkc_job_to_proto(spec)
    header = ["parties", "session", *(f"{s} s" for s in STEPS)]
    header += ["wall s", "leader CPU s", "daemons CPU s"]
    medians = []
    for n in (int(p) for p in args.parties.split(",")):
        parts = split_table(table, n, "random", 0)
        with federation(parts, args.taxonomy, rpc_seconds=120.0) as fed:
            job = fed.leader_job(
                taxonomy,
                spec,
                Path("/dev/null"),
                rpc_seconds=120.0,
                sum_mode=args.sum_mode,
                union_mode=args.union_mode,
            )
            first = one_session(fed, job, items, proto)
            print(f"  {n} parties, first: " + ", ".join(f"{k} {v:.3f}" for k, v in first.items()))
            pool = None if CHANNELS is None else CHANNELS(job)
            runs: dict[str, list[dict[str, float]]] = {"job": [], "rerun": []}
            for _ in range(args.repeat):
                runs["job"].append(one_session(fed, job, items, proto))
                runs["rerun"].append(one_session(fed, job, items, proto, pool))
            if pool is not None:
                pool.__exit__(None, None, None)
        keys = [*STEPS, "wall", "leader CPU", "daemons CPU"]
        for kind, kind_runs in runs.items():
            for r in kind_runs:
                print(f"  {n} parties, {kind}: " + ", ".join(f"{k} {v:.3f}" for k, v in r.items()))
            medians.append(
                [n, kind, *(f"{statistics.median(r[k] for r in kind_runs):.3f}" for k in keys)]
            )
    print(markdown_table(header, medians))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
