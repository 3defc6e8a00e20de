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

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from fedanon.algorithms.randomization.anonymity import attribute_probabilities
from fedanon.algorithms.randomization.jobspec import RandomizeSpec
from fedanon.algorithms.randomization.leader_half import Plan, split_histograms
from fedanon.atomic import write_json_atomic
from fedanon.configschema import (
    ConfigError,
    Either,
    Flag,
    Integer,
    Key,
    Names,
    Number,
    Numbers,
    Table,
    TableOf,
    Text,
    Values,
)
from fedanon.errors import FedanonError
from fedanon.federation.config import Hop
from fedanon.federation.randomize_job import RANDOMIZE_ROUND, UNION_ROUND, spec_to_proto
from fedanon.federation.tls import TLSFiles
from fedanon.federation.wire import to_vector
from fedanon.leader.federation import FederationSource, Traffic
from fedanon.leader.kind import JobFile, LeaderKind, PhaseTimer, Progress, Report, Row
from fedanon.leader.ring import open_ring
from fedanon.leader.ring_settings import RingSettings, ring_settings
from fedanon.leader.session import Session
from fedanon.leader.union import run_union
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.readers.table_io import write_table
from fedanon.report.summary import randomization_rows


def _randomize_plan(section: dict[str, Any], path: str, where: str) -> None:
    """A domain for each QID and none for other columns; attrs and p fit the method and the
    number of QIDs (p a distribution over the QIDs)."""
    qids, domains = section["qids"], section["domains"] or {}
    for column in qids:
        if column not in domains:
            raise ConfigError(f"{where}: {path}.domains: no agreed domain for QID '{column}'")
    for column, values in domains.items():
        key = f"{path}.domains.{column}"
        if column not in qids:
            raise ConfigError(f"{where}: {key}: '{column}' is not a QID")
        if len(values) < 2:
            raise ConfigError(
                f"{where}: {key}: QID column '{column}': the agreed domain has {len(values)} "
                "value(s); randomizing needs at least 2"
            )
    attrs, p = section["attrs"], section["p"]
    if section["method"] == "ra":
        if attrs not in (None, 1):
            raise ConfigError(f'{where}: {path}.attrs: applies to method = "enhanced" only')
        if not isinstance(p, str):
            try:  # the list's own checks need only the number of QIDs
                attribute_probabilities(p, [np.zeros(0)] * len(qids), qids)
            except FedanonError as exc:
                raise ConfigError(f"{where}: {path}.p: {exc}") from None
        return
    if not isinstance(p, str) or p != "uniform":
        raise ConfigError(f'{where}: {path}.p: applies to method = "ra" only')
    if attrs is not None and attrs > len(qids):
        raise ConfigError(
            f"{where}: {path}.attrs: expected at most the number of QIDs ({len(qids)}), got {attrs}"
        )


RANDOMIZE_SCHEMA = Table(
    {
        "qids": Key(Names(min_items=1), required=True),
        "domains": Key(TableOf(Values(), expected='a table of column = ["value", "value", ...]')),
        "method": Key(Text(choices=("ra", "enhanced")), default="ra"),
        "attrs": Key(Integer(1, 2**31 - 1)),
        "p": Key(
            Either(Text(choices=("uniform", "optimal")), Numbers(Number(0, 1))), default="uniform"
        ),
        "keep_at_parties": Key(Flag(), default=False),
    },
    checks=(_randomize_plan,),
)


@dataclass
class RandomizeLeaderJob(RingSettings):
    """A federated randomization run: parties, the job and the outputs (the ring settings are
    keyword arguments: :class:`RingSettings`; its union is always layered)."""

    kind: ClassVar[str] = "randomize"

    parties: list[Hop]
    tls: TLSFiles | None
    spec: RandomizeSpec
    out: Path | None
    report: Path | None = None
    name: str = "leader"
    extra_report: dict[str, Any] = field(default_factory=dict)
    relay_listen: str | None = None  # transport = "outbound": the relay's address

    def check(self) -> None:
        """Refuse jobs the protocol cannot run safely (same rules as distributed LKC)."""
        self.spec.check()
        self.check_ring(self.parties, "the other's histograms from the global marginals")
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


def run_randomize(
    job: RandomizeLeaderJob, on_plan: Callable[[Plan], None] | None = None
) -> dict[str, Any]:
    """Run one session; write the integrated release (unless kept at the parties) and report.

    `on_plan` receives the plan made from the global marginals (the simulation compares it with
    the centralized plan of the union).
    """
    job.check()
    spec = job.spec
    traffic = Traffic()
    session = Session(job)
    timer = PhaseTimer()
    with session:
        ring = open_ring(
            session,
            spec.fingerprint_items(),
            pb.OpenSessionRequest(randomize=spec_to_proto(spec)),
            job.sum_mode,
        )
        timer.since_start("handshake")

        with timer.phase("marginals"):
            layout = HistogramLayout(int(sum(spec.sizes)))
            source = FederationSource(session.session_id, layout, ring.sums, traffic)  # type: ignore[arg-type]
            total = source.start([])
            plan = global_plan(spec, total)
            if on_plan is not None:
                on_plan(plan)

        with timer.phase("randomize"):
            request = pb.RandomizeRequest(
                ref=session.ref(RANDOMIZE_ROUND),
                marginals=to_vector(total),
                p=[] if plan.p is None else [float(x) for x in plan.p],
            )
            session.fan_out("randomize", lambda n, s: s.Randomize(request, timeout=job.rpc_seconds))
            traffic.add("randomize", request.ByteSize() * len(session.ring), 0)

        rows: list[list[str]] = []
        if not spec.keep_at_parties:
            with timer.phase("union"):
                rows = run_union(session, ring.keys, traffic, job, UNION_ROUND)
        ended = session.end()

    if not spec.keep_at_parties:
        assert job.out is not None
        with timer.phase("write"):
            write_table(pd.DataFrame(rows, columns=ring.columns), job.out)
    timer.since_start("total")
    report = {
        **plan.summary(),
        "mode": "distributed",
        "session_id": session.session_id,
        "parties": session.ring,
        "sum_mode": job.sum_mode,
        "kept_at_parties": spec.keep_at_parties,
        "released_records": None if spec.keep_at_parties else len(rows),
        "seconds": timer.rounded(),
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


def load_randomize_job(file: JobFile) -> RandomizeLeaderJob:
    """A job.toml with a [randomize] section: QIDs, their agreed domains, method, p or k."""
    data, section = file.data, file.data["randomize"]
    qids = section["qids"]
    domains = section["domains"]
    p = section["p"]
    spec = RandomizeSpec(
        tuple(qids),
        tuple(tuple(domains[q]) for q in qids),
        section["method"],
        section["attrs"],
        p if isinstance(p, str) else tuple(p),
        section["keep_at_parties"],
    )
    # The randomization job's union is layered: its [union] mode is not read.
    settings = {**ring_settings(data), "union_mode": "layered"}
    return RandomizeLeaderJob(
        parties=file.parties,
        tls=file.tls,
        spec=spec,
        out=file.path("out"),
        report=file.path("report"),
        name=data["name"],
        **settings,
    )


def randomize_summary(report: Report) -> list[Row]:
    """The summary table of a distributed randomization run."""
    return [
        ("parties", ", ".join(report["parties"])),
        ("sum mode", report["sum_mode"]),
        *randomization_rows(report),
        ("seconds", report["seconds"]),
        ("output", report["output"] or "kept at the parties"),
    ]


def _run(job: RandomizeLeaderJob, _progress: Progress) -> Report:
    return run_randomize(job)


KIND = LeaderKind(
    section="randomize",
    title="distributed randomization",
    schema=RANDOMIZE_SCHEMA,
    load=load_randomize_job,
    run=_run,
    summary=randomize_summary,
)
