"""The leader's side of a federated randomization job (RA / enhanced RA(k)).

Steps: open the session everywhere (fingerprints of the job and the released columns must
agree), share the union and pairwise keys (the session plumbing of leader/session.py, shared
with LKC), sum the parties' per-QID histograms over the agreed
domains by the ring or pairwise secure sum (the leader learns only the global histograms), derive
the plan (probabilities, Pa) from them, send the global marginals and probabilities to every
party, which randomizes its own rows, then integrate the randomized rows by the secure set
union - or leave them at the parties when the job says so. A party's record never leaves it
before it is randomized.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from fedanon.algorithms.randomization.jobspec import RandomizeSpec
from fedanon.algorithms.randomization.leader_half import Plan, split_histograms
from fedanon.atomic import write_json_atomic
from fedanon.crypto.parallel import Parallelism
from fedanon.errors import FedanonError
from fedanon.federation.chunks import DEFAULT_CHUNK_BYTES
from fedanon.federation.tls import TLSFiles
from fedanon.federation.wire import to_vector
from fedanon.leader.federation import FederationSource, Traffic
from fedanon.leader.session import Session, check_ring_job, open_ring
from fedanon.leader.union import run_union
from fedanon.party.config import Hop
from fedanon.party.randomize import RANDOMIZE_ROUND, UNION_ROUND, spec_to_proto
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.readers.table_io import write_table


@dataclass
class RandomizeLeaderJob:
    """A federated randomization run: parties, the job, the secure-sum mode and the outputs."""

    parties: list[Hop]
    tls: TLSFiles | None
    spec: RandomizeSpec
    out: Path | None
    report: Path | None = None
    name: str = "leader"
    sum_mode: str = "ring"
    allow_two_parties: bool = False
    rpc_seconds: float = 60.0
    relay_listen: str | None = None  # transport = "outbound": the relay's address
    union_seconds: float = 600.0
    union_parallelism: Parallelism = field(default_factory=Parallelism.configured)
    union_pad_to: int = 0
    union_chunk_bytes: int = DEFAULT_CHUNK_BYTES  # bound on one union message's items
    extra_report: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """Refuse jobs the protocol cannot run safely (same rules as distributed LKC)."""
        self.spec.check()
        check_ring_job(
            self.parties,
            self.sum_mode,
            self.allow_two_parties,
            self.union_pad_to,
            "the other's histograms from the global marginals",
        )
        if self.out is None and not self.spec.keep_at_parties:
            raise FedanonError(
                "no output path for the integrated release (out = ...), and "
                "the records are not kept at the parties"
            )


@dataclass(frozen=True)
class HistogramLayout:
    """The secure sum's vector for this job: every QID histogram, concatenated."""

    length: int

    def vector_length(self, _partitions: int) -> int:
        return self.length


def global_plan(spec: RandomizeSpec, total: Any) -> Plan:
    """Cut the summed vector into marginals, check they describe one set of rows, plan."""
    marginals = split_histograms(total, spec.sizes)
    records = {int(m.sum()) for m in marginals}
    if len(records) != 1:
        raise FedanonError("the global histograms count different numbers of records per QID")
    return spec.plan(marginals)


def run_randomize(job: RandomizeLeaderJob, on_plan: Any | None = None) -> dict[str, Any]:
    """Run one session; write the integrated release (unless kept at the parties) and report.

    `on_plan` receives the plan made from the global marginals (the simulation compares it with
    the centralized plan of the union).
    """
    job.check()
    spec = job.spec
    timings: dict[str, float] = {}
    traffic = Traffic()
    session = Session(job)
    began = time.perf_counter()
    with session:
        ring = open_ring(
            session,
            spec.fingerprint_items(),
            pb.OpenSessionRequest(randomize=spec_to_proto(spec)),
            job.sum_mode,
        )
        timings["handshake"] = time.perf_counter() - began

        mark = time.perf_counter()
        layout = HistogramLayout(int(sum(spec.sizes)))
        source = FederationSource(session.session_id, layout, ring.sums, traffic)  # type: ignore[arg-type]
        total = source.start([])
        plan = global_plan(spec, total)
        if on_plan is not None:
            on_plan(plan)
        timings["marginals"] = time.perf_counter() - mark

        mark = time.perf_counter()
        request = pb.RandomizeRequest(
            ref=session.ref(RANDOMIZE_ROUND),
            marginals=to_vector(total),
            p=[] if plan.p is None else [float(x) for x in plan.p],
        )
        session.fan_out("randomize", lambda n, s: s.Randomize(request, timeout=job.rpc_seconds))
        traffic.add("randomize", request.ByteSize() * len(session.ring), 0)
        timings["randomize"] = time.perf_counter() - mark

        rows: list[list[str]] = []
        if not spec.keep_at_parties:
            mark = time.perf_counter()
            rows = run_union(
                session,
                ring.keys,
                traffic,
                job.rpc_seconds,
                job.union_seconds,
                UNION_ROUND,
                job.union_parallelism,
                job.union_pad_to,
                chunk_bytes=job.union_chunk_bytes,
            )
            timings["union"] = time.perf_counter() - mark
        ended = session.end()

    if not spec.keep_at_parties:
        assert job.out is not None
        mark = time.perf_counter()
        write_table(pd.DataFrame(rows, columns=ring.columns), job.out)
        timings["write"] = time.perf_counter() - mark
    timings["total"] = time.perf_counter() - began
    report = {
        **plan.summary(),
        "mode": "distributed",
        "session_id": session.session_id,
        "parties": session.ring,
        "sum_mode": job.sum_mode,
        "kept_at_parties": spec.keep_at_parties,
        "released_records": None if spec.keep_at_parties else len(rows),
        "seconds": {k: round(v, 4) for k, v in timings.items()},
        "leader_bytes": {"sent": traffic.sent, "received": traffic.received},
        "party_bytes": {
            n: {"sent": r.bytes_sent, "received": r.bytes_received} for n, r in ended.items()
        },
        "output": None if spec.keep_at_parties else str(job.out),
        **job.extra_report,
    }
    if job.report is not None:
        write_json_atomic(job.report, report)
    return report
