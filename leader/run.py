"""``fedanon leader run``: one distributed LKC session from handshake to written release.

Order of a session: handshake (fingerprints compared item by item, columns agreed), key sharing
for the union, the specialization loop (one secure sum per iteration), the secure set union
of the generalized records, End. Any failure aborts the session at every reachable party, names
the party and phase, and leaves no output file. From the handshake on, a heartbeat renews the
session's lease at every party, so that however long the leader computes between messages no
other leader can take the parties over; if this leader dies, the leases lapse and the parties
accept the next job. The session plumbing (handshake, lease, keys, sum protocol, abort, End) is
leader/session.py's, shared with the other job kinds; this module is the LKC job's own steps.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from fedanon.algorithms.tds.api import build_report
from fedanon.algorithms.tds.engine import LKCEngine, StepInfo
from fedanon.algorithms.tds.layout import StatsLayout
from fedanon.errors import FedanonError
from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.leader.federation import FederationSource, Traffic
from fedanon.leader.session import Session, open_ring
from fedanon.leader.union import run_union
from fedanon.models.lkc import check_lkc
from fedanon.outputs import CommandOutputs
from fedanon.protos import fedanon_v1_pb2 as pb

if TYPE_CHECKING:
    from fedanon.leader.config import LeaderJob


def run_job(
    job: LeaderJob,
    on_step: Callable[[StepInfo], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run one session; write the release and report; return the report.

    `on_step` hears every specialization; `on_phase` a line at the start and end of every
    phase (handshake, specialization, each phase of the union, check and write).
    """
    show = on_phase or (lambda _text: None)
    job.check()
    outputs = CommandOutputs()
    outputs.claim("out", job.out)
    outputs.claim("report", job.report)
    spec = job.spec
    schema = spec.schema(job.taxonomy)
    timings: dict[str, float] = {}
    revealed: dict[str, int] = {}  # party record counts, only when the union reveals them
    traffic = Traffic()
    session = Session(job)
    began = time.perf_counter()
    names = ", ".join(f"{hop.name} ({hop.address or 'via the relay'})" for hop in job.parties)
    show(f"handshake: connecting to {len(job.parties)} parties: {names}")
    with session:
        ring = open_ring(
            session,
            spec.fingerprint_items(schema),
            pb.OpenSessionRequest(lkc=lkc_job_to_proto(spec)),
            job.sum_mode,
            prepare_union=job.union_mode == "layered",
            pad_to=job.union_pad_to,
        )
        timings["handshake"] = time.perf_counter() - began
        show(f"handshake: done; {len(session.ring)} parties agreed on the job and the keys")
        show("specialize: secure sums of the statistics, one per iteration")

        mark = time.perf_counter()
        source = FederationSource(
            session.session_id, StatsLayout.for_schema(schema), ring.sums, traffic
        )
        result = LKCEngine(
            schema, spec.params, score=spec.score, on_step=on_step, suppress=spec.suppress
        ).run(source)
        timings["specialize"] = time.perf_counter() - mark
        show(f"specialize: done; {source.iteration} iterations")

        mark = time.perf_counter()
        rows = run_union(
            session,
            ring.keys,
            traffic,
            job.rpc_seconds,
            job.union_seconds,
            source.iteration,
            job.union_parallelism,
            job.union_pad_to,
            job.union_mode,
            result.suppressed_partitions.tolist(),
            on_phase,
            on_counts=revealed.update,
            chunk_bytes=job.union_chunk_bytes,
        )
        timings["union"] = time.perf_counter() - mark
        show(f"union: done; {len(rows):,} records")

        ended = session.end()

    mark = time.perf_counter()
    show("check: LKC-privacy of the integrated release")
    release = pd.DataFrame(rows, columns=ring.columns)
    sensitive: dict[str, list[str]] = defaultdict(list)
    for s in spec.sensitive:
        sensitive[s.column].append(s.value)
    roots = {t.attribute: t.labels[t.root] for t in schema.taxonomies}
    check = check_lkc(
        release,
        spec.qids,
        dict(sensitive),
        spec.params.L,
        spec.params.K,
        spec.params.C,
        suppressed=roots if spec.suppress else None,
        max_suppressed=result.suppression_budget,
    )
    timings["check"] = time.perf_counter() - mark
    if not check.ok:
        raise FedanonError(
            f"the integrated release fails LKC-privacy ({check.worst}); nothing written"
        )
    mark = time.perf_counter()
    with outputs.writing() as staged:
        staged.table(job.out, release)
        timings["write"] = time.perf_counter() - mark
        show("write: the release" + (" and the report" if job.report else ""))
        timings["total"] = time.perf_counter() - began

        report = build_report(
            schema, spec.params, spec.score, result, spec.suppress, spec.suppressed_mode
        )
        report.update(
            {
                "mode": "distributed",
                "session_id": session.session_id,
                "parties": session.ring,
                "sum_mode": job.sum_mode,
                "union_mode": job.union_mode,
                "iterations": source.iteration,
                "seconds": {k: round(v, 4) for k, v in timings.items()},
                "leader_bytes": {"sent": traffic.sent, "received": traffic.received},
                "party_bytes": {
                    n: {"sent": r.bytes_sent, "received": r.bytes_received}
                    for n, r in ended.items()
                },
                "privacy_check": check.to_dict(),
                "party_records": revealed or None,
                "output": str(job.out),
                **job.extra_report,
            }
        )
        if job.report is not None:
            staged.json(job.report, report)
    return report
