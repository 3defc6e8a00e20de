"""The leader's side of a federated kACTUS job (horizontal partitioning).

Steps: open the ring session everywhere (fingerprints of the job must agree), share the union
and sum keys (leader/ring.py), then `fedanon.algorithms.kactus.federated_leader.lead_kactus`
through :class:`DaemonChannel`: the secure set union of the parties' QID texts (the agreed
encoding) and of their C4.5 domains, and every step as one ``KactusStep`` to every party
followed, for a summed step, by one ring or pairwise secure sum. Phase 1's tree, phase 2's
compliance and donation decisions, the donated records' cut-offs and the group values all come
from sums. The integrated release is the secure set union of the parties' released rows; the
independent k-anonymity checker runs on it before anything is written
(docs/federated_classification.md, docs/leakage.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from fedanon.algorithms.kactus.api import NUMERIC_RULES
from fedanon.algorithms.kactus.federated import kactus_report
from fedanon.algorithms.kactus.federated_leader import lead_kactus
from fedanon.algorithms.kactus.federated_party import Step
from fedanon.algorithms.tabular import checked_release, generator
from fedanon.configschema import ConfigError, Flag, Integer, Key, Names, Table, Text
from fedanon.errors import FedanonError
from fedanon.federation.config import Hop
from fedanon.federation.kactus_job import (
    QID_UNION_ROUND,
    KactusOptions,
    fingerprint_items,
    kactus_job_to_proto,
    step_to_proto,
)
from fedanon.federation.tls import TLSFiles
from fedanon.leader.federation import PartyFailure, SumProtocol, Traffic
from fedanon.leader.kind import JobFile, LeaderKind, PhaseTimer, Progress, Report, Row
from fedanon.leader.ring import RingOpened, open_ring
from fedanon.leader.ring_settings import ClassificationSettings, ring_settings
from fedanon.leader.session import Session
from fedanon.leader.union import run_union
from fedanon.outputs import CommandOutputs
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.release import Release


def _kactus_task(section: dict[str, Any], path: str, where: str) -> None:
    """The class is not a QID; the numeric rule is one kACTUS knows."""
    if section["class"] in section["qids"]:
        raise ConfigError(f"{where}: {path}.class: '{section['class']}' is also a QID")
    if section["numeric"] not in NUMERIC_RULES:
        raise ConfigError(f"{where}: {path}.numeric: expected one of {', '.join(NUMERIC_RULES)}")


KACTUS_SCHEMA = Table(
    {
        "qids": Key(Names(min_items=1), required=True),
        "class": Key(Text(), required=True),
        "k": Key(Integer(2, 2**63 - 1), required=True),
        "marker": Key(Text(), default="?"),
        "numeric": Key(Text(), default="median"),
        "prune": Key(Flag(), default=True),
        "narrow": Key(Flag(), default=False),
        "seed": Key(Integer(0, 2**63 - 1)),
    },
    checks=(_kactus_task,),
)


@dataclass
class KactusLeaderJob(ClassificationSettings):
    """A federated kACTUS run: parties, kACTUS's options and the outputs (the ring settings
    are keyword arguments: :class:`ClassificationSettings`, whose sum is pairwise by default;
    its unions are always layered)."""

    kind: ClassVar[str] = "kactus"

    parties: list[Hop]
    tls: TLSFiles | None
    options: KactusOptions
    out: Path | None
    seed: int | None = None  # the leader's draws (donation sizes); None: secret random bits
    report: Path | None = None
    name: str = "leader"
    relay_listen: str | None = None  # transport = "outbound": the relay's address

    def check(self) -> None:
        """Refuse jobs the protocol cannot run safely (the ring rules of every ring kind)."""
        self.check_ring(self.parties, "the other's counts at every node and group")
        if self.out is None:
            raise FedanonError("no output path for the release (out = ...)")
        if self.options.numeric not in NUMERIC_RULES:
            raise FedanonError(f"[kactus] numeric is one of {', '.join(NUMERIC_RULES)}")
        if self.options.k < 2:
            raise FedanonError(f"[kactus] k must be at least 2, got {self.options.k}")


class DaemonChannel:
    """`lead_kactus`'s channel to the party daemons: every step is the next iteration, one
    ``KactusStep`` to every party, then (summed steps) one secure sum; the unions run at the
    current iteration."""

    def __init__(
        self,
        session: Session,
        ring: RingOpened,
        traffic: Traffic,
        job: KactusLeaderJob,
        show: Callable[[str], None],
    ) -> None:
        self.session = session
        self.ring = ring
        self.sums: SumProtocol = ring.sums
        self.traffic = traffic
        self.job = job
        self.show = show
        self.iteration = QID_UNION_ROUND
        self.rounds = 0

    def union(self, stage: str) -> list[bytes]:
        self.show(f"{stage}: secure set union of the parties' values")
        rows = self.rows()
        try:
            return sorted({bytes.fromhex(row[0]) for row in rows})
        except (ValueError, IndexError):
            raise FedanonError(f"{stage}: the union's items do not decode") from None

    def rows(self) -> list[list[str]]:
        """The secure set union at this iteration."""
        return run_union(
            self.session, self.ring.keys, self.traffic, self.job, self.iteration,
            on_phase=self.show,
        )  # fmt: skip

    def _send(self, step: Step) -> tuple[pb.SessionRef, int]:
        self.iteration += 1
        ref = self.session.ref(self.iteration)
        request = step_to_proto(step, ref)
        seconds = self.job.rpc_seconds
        what = f"kACTUS step {step.name}, iteration {self.iteration}"
        replies = self.session.fan_out(what, lambda n, s: s.KactusStep(request, timeout=seconds))
        self.traffic.add("steps", request.ByteSize() * len(replies), 0)
        lengths = {r.length for r in replies.values()}
        if len(lengths) != 1:
            party = min(replies, key=lambda n: replies[n].length)
            raise PartyFailure(f"{what}: party {party} answered a vector of another length")
        return ref, lengths.pop()

    def ask(self, step: Step, length: int) -> np.ndarray:
        ref, got = self._send(step)
        if got != length:
            raise PartyFailure(f"kACTUS step {step.name}: vectors of {got}, expected {length}")
        self.rounds += 1
        return self.sums.total(pb.SumRequest(ref=ref), length, self.traffic).astype(np.int64)

    def tell(self, step: Step) -> None:
        _ref, got = self._send(step)
        if got:
            raise PartyFailure(f"kACTUS step {step.name}: a vector where none was expected")


def federated_kactus(
    job: KactusLeaderJob, progress: Progress | None = None
) -> tuple[Release, Report]:
    """Run one session: the integrated release, checked k-anonymous by the independent
    checker (a release that fails is never returned), and the run's report."""
    job.check()
    show = (progress or Progress()).phase
    traffic = Traffic()
    session = Session(job)
    timer = PhaseTimer()
    options = job.options
    task = kactus_job_to_proto(options)
    with session:
        ring = open_ring(
            session, fingerprint_items(task), pb.OpenSessionRequest(kactus=task), job.sum_mode
        )
        timer.since_start("handshake")
        channel = DaemonChannel(session, ring, traffic, job, show)
        with timer.phase("anonymize"):
            show("anonymize: tree, compliance, donations and group values from secure sums")
            led = lead_kactus(
                channel,
                list(options.qids),
                k=options.k,
                prune=options.prune,
                narrow=options.narrow,
                numeric=options.numeric,
                rng=generator(job.seed),
            )
        with timer.phase("union"):
            rows = channel.rows()
        show(f"union: done; {len(rows):,} records")
        ended = session.end()
    with timer.phase("check"):
        show("check: k-anonymity of the integrated release (independent checker)")
        table = pd.DataFrame(rows, columns=ring.columns)
        report = kactus_report(
            list(options.qids), options.k, options.marker, table, led, options.numeric
        )
        release = checked_release(table, report)
    timer.since_start("total")
    report = {
        **release.report,
        "mode": "distributed",
        "session_id": session.session_id,
        "parties": session.ring,
        "sum_mode": job.sum_mode,
        "sum_rounds": channel.rounds,
        "tree": {"nodes": _nodes(led.tree)},
        "group_sizes": [s for _, s in led.plan.groups],
        # Each group's path as text (the root's rest: "()"), in the order of the sizes.
        "group_paths": [repr(path) for path in led.paths],
        "seconds": timer.rounded(),
        "leader_bytes": {"sent": traffic.sent, "received": traffic.received},
        "party_bytes": {
            n: {"sent": r.bytes_sent, "received": r.bytes_received} for n, r in ended.items()
        },
    }
    return Release(release.table, report), report


def run_kactus(job: KactusLeaderJob, progress: Progress | None = None) -> Report:
    """Run one session; write the k-anonymous release to `out` (and the report) atomically,
    both or neither, and return the report."""
    outputs = CommandOutputs()
    outputs.claim("out", job.out)
    outputs.claim("report", job.report)
    release, report = federated_kactus(job, progress)
    assert job.out is not None
    report = {**report, "output": str(job.out)}
    with outputs.writing() as staged:
        staged.table(job.out, release.table)
        if job.report is not None:
            staged.json(job.report, report)
    return report


def _nodes(tree: Any) -> int:
    stack, count = [tree], 0
    while stack:
        node = stack.pop()
        count += 1
        stack.extend(node.children.values())
    return count


def load_kactus_job(file: JobFile) -> KactusLeaderJob:
    """A job.toml with a [kactus] section: the QIDs, the class, k and kACTUS's options."""
    data, section = file.data, file.data["kactus"]
    settings = {**ring_settings(data), "union_mode": "layered"}
    options = KactusOptions(
        list(section["qids"]),
        section["class"],
        section["k"],
        section["marker"],
        section["numeric"],
        section["prune"],
        section["narrow"],
    )
    return KactusLeaderJob(
        parties=file.parties,
        tls=file.tls,
        options=options,
        out=file.required_path("out"),
        seed=section.get("seed"),
        report=file.path("report"),
        name=data["name"],
        **settings,
    )


def kactus_summary(report: Report) -> list[Row]:
    """The summary table of a federated kACTUS run."""
    groups = report["groups"]
    return [
        ("parties", ", ".join(report["parties"])),
        ("sum mode", report["sum_mode"]),
        ("records in", report["records"]),
        ("released", report["released"]),
        ("dropped", report["dropped"]),
        ("groups", f"{groups['count']} (smallest {groups['min_size']})"),
        ("donated", report["donated"]),
        ("secure sums", f"{report['sum_rounds']} rounds"),
        ("k-anonymous (independent check)", report["privacy_check"]["ok"]),
        ("seconds", report["seconds"]),
        ("output", report["output"]),
    ]


KIND = LeaderKind(
    section="kactus",
    title="federated kACTUS",
    schema=KACTUS_SCHEMA,
    load=load_kactus_job,
    run=run_kactus,
    summary=kactus_summary,
    required={"out": "a file path for the release"},
)
