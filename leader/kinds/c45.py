"""The leader's side of a federated C4.5 job (horizontal partitioning).

Steps: open the ring session everywhere (fingerprints of the task must agree), share the union
and sum keys (leader/ring.py, as LKC and randomization do), take the secure set union of every
party's distinct values (the agreed domains: the leader learns their union, not who holds
what), then grow and prune the tree with `fedanon.utility.c45_counts`' count-driven learner,
whose every batch of count queries is one round: the queries to every party (``C45Count``),
then one ring or pairwise secure sum of the parties' count vectors. The leader sees sums only;
the tree equals `fedanon.utility.c45.C45` fitted on the pooled table, node for node
(docs/federated_classification.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from fedanon.atomic import write_json_atomic, write_text_atomic
from fedanon.configschema import ConfigError, Flag, Integer, Key, Names, Number, Table, Text
from fedanon.errors import FedanonError
from fedanon.federation.c45_job import UNION_ROUND, c45_job_to_proto, queries_to_batch
from fedanon.federation.c45_job import fingerprint_items as c45_fingerprint_items
from fedanon.federation.config import Hop
from fedanon.federation.tls import TLSFiles
from fedanon.leader.federation import PartyFailure, SumProtocol, Traffic
from fedanon.leader.kind import JobFile, LeaderKind, PhaseTimer, Progress, Report, Row
from fedanon.leader.ring import open_ring
from fedanon.leader.ring_settings import ClassificationSettings, ring_settings
from fedanon.leader.session import Session
from fedanon.leader.union import run_union
from fedanon.packed_counts import fields_per_word, packed_length, unpack_fields
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.utility.c45 import C45
from fedanon.utility.c45_counts import (
    CLASSES,
    HISTOGRAMS,
    FeatureKinds,
    Query,
    Schema,
    agree_schema,
    fit_from_counts,
)


def _c45_task(section: dict[str, Any], path: str, where: str) -> None:
    """Numeric columns are features and the class is not one (cf's range is its rule's)."""
    features = section["features"]
    for column in section["numeric"]:
        if column not in features:
            raise ConfigError(f"{where}: {path}.numeric: '{column}' is not a feature")
    if section["class"] in features:
        raise ConfigError(f"{where}: {path}.class: '{section['class']}' is also a feature")


C45_SCHEMA = Table(
    {
        "features": Key(Names(min_items=1), required=True),
        "numeric": Key(Names(), default=[]),
        "class": Key(Text(), required=True),
        "min_leaf": Key(Integer(1, 2**31 - 1), default=2),
        "cf": Key(Number(0, 1, low_open=True, high_open=True), default=0.25),
        "prune": Key(Flag(), default=True),
        "subtree_raising": Key(Flag(), default=True),
        "narrow": Key(Flag(), default=False),
    },
    checks=(_c45_task,),
)


@dataclass
class C45LeaderJob(ClassificationSettings):
    """A federated C4.5 run: parties, the learning task, C4.5's options and the outputs (the
    ring settings are keyword arguments: :class:`ClassificationSettings`, whose sum is pairwise
    by default; its union is always layered)."""

    kind: ClassVar[str] = "c45"

    parties: list[Hop]
    tls: TLSFiles | None
    features: list[str]
    class_column: str
    out: Path | None
    numeric: list[str] = field(default_factory=list)
    min_leaf: int = 2
    cf: float = 0.25
    prune: bool = True
    subtree_raising: bool = True
    narrow: bool = False
    report: Path | None = None
    name: str = "leader"
    relay_listen: str | None = None  # transport = "outbound": the relay's address

    @property
    def kinds(self) -> FeatureKinds:
        return FeatureKinds(list(self.features), frozenset(self.numeric))

    def check(self) -> None:
        """Refuse jobs the protocol cannot run safely (the ring rules of every ring kind)."""
        self.check_ring(self.parties, "the other's class counts at every node")
        if self.out is None:
            raise FedanonError("no output path for the tree (out = ...)")
        try:
            C45(self.min_leaf, self.cf, self.prune, self.subtree_raising)
        except ValueError as exc:
            raise FedanonError(f"[c45] {exc}") from None


#: The most words one round sums (8 bytes each: a 32 MiB ``Sum``, well under a party's default
#: ``max_message_mb`` of 128, which must hold about three times a request while it is parsed;
#: packed counts fit several to a word). A larger batch of queries is split over several
#: rounds; one query larger than this (a histogram over a huge agreed domain) still goes alone.
MAX_ROUND_COUNTS = 4_000_000


class SecureSumOracle:
    """The learner's count oracle at the leader: one round per batch of queries (or per part
    of a batch, at most :data:`MAX_ROUND_COUNTS` counts), the queries to every party, then
    one secure sum (ring or pairwise) of their count vectors, so the leader holds only the
    totals. The first round also carries the agreed domains.

    Once a round has answered the root's class counts (the learner's first query), every
    later count is at most their sum N, the global record count: the parties then pack their
    counts in fields of N's bit length, several per uint64 word (``count_bits``), which the sum
    adds field by field without a carry, so the rounds move a fraction of the words."""

    def __init__(
        self,
        session: Session,
        sums: SumProtocol,
        schema: Schema,
        domain_items: Sequence[bytes],
        traffic: Traffic,
        start: int = UNION_ROUND,
    ) -> None:
        self.session = session
        self.start = start  # the iteration before the first round (a later tree in a session)
        self.sums = sums
        self.schema = schema
        self.domain_items = list(domain_items)
        self.traffic = traffic
        self.rounds = 0  # secure-sum rounds run so far
        self.counts_summed = 0  # length of the vectors summed so far
        self.bits = 0  # count_bits of the next rounds (0: one count per word)

    def count(self, queries: Sequence[Query]) -> np.ndarray:
        limit = MAX_ROUND_COUNTS * fields_per_word(self.bits)
        totals = [self._round(part) for part in _parts(queries, self.schema, limit)]
        return np.concatenate(totals) if totals else np.zeros(0, dtype=np.int64)

    def _round(self, queries: Sequence[Query]) -> np.ndarray:
        self.rounds += 1
        ref = self.session.ref(self.start + self.rounds)
        request = pb.C45CountRequest(
            ref=ref,
            batch=queries_to_batch(queries),
            domain_items=self.domain_items if self.rounds == 1 else [],
            count_bits=self.bits,
        )
        counts = sum(self.schema.size(q) for q in queries)
        length = packed_length(counts, self.bits)
        seconds = self.session.job.rpc_seconds
        replies = self.session.fan_out(
            f"count queries, round {self.rounds}",
            lambda n, s: s.C45Count(request, timeout=seconds),
        )
        wrong = [n for n, r in replies.items() if r.length != length]
        if wrong:
            raise PartyFailure(
                f"count queries, round {self.rounds}: party {wrong[0]}: "
                f"{replies[wrong[0]].length} counts, expected {length}"
            )
        self.traffic.add("queries", request.ByteSize() * len(replies), 0)
        words = self.sums.total(pb.SumRequest(ref=ref), length, self.traffic)
        total = unpack_fields(words, self.bits, counts).astype(np.int64)
        self.counts_summed += counts
        if not self.bits:
            self._bound(queries, total)
        return total

    def _bound(self, queries: Sequence[Query], total: np.ndarray) -> None:
        """Set `bits` from the root's class counts if this round answered them."""
        k, start = len(self.schema.classes), 0
        for query in queries:
            if query.path == () and query.kind in (HISTOGRAMS, CLASSES):
                self.bits = max(1, int(total[start : start + k].sum()).bit_length())
                return
            start += self.schema.size(query)


def _parts(queries: Sequence[Query], schema: Schema, limit: int) -> list[list[Query]]:
    """`queries` in order, cut into runs of at most `limit` counts each."""
    parts: list[list[Query]] = []
    size = 0
    for query in queries:
        length = schema.size(query)
        if not parts or size + length > limit:
            parts.append([])
            size = 0
        parts[-1].append(query)
        size += length
    return parts


def run_c45(job: C45LeaderJob, progress: Progress | None = None) -> Report:
    """Run one session; write the tree (C4.5's text form) to `out` and return the report."""
    job.check()
    show = (progress or Progress()).phase
    traffic = Traffic()
    session = Session(job)
    timer = PhaseTimer()
    task = c45_job_to_proto(job.kinds, job.class_column)
    with session:
        ring = open_ring(
            session, c45_fingerprint_items(task), pb.OpenSessionRequest(c45=task), job.sum_mode
        )
        timer.since_start("handshake")
        with timer.phase("domains"):
            show("domains: secure set union of the parties' values")
            rows = run_union(session, ring.keys, traffic, job, UNION_ROUND, on_phase=show)
            items = sorted({bytes.fromhex(row[0]) for row in rows})
            try:
                schema = agree_schema(job.kinds, [], lambda _sets: items)
            except ValueError as exc:
                raise FedanonError(f"domains: the union's items do not decode: {exc}") from None
        with timer.phase("tree"):
            show("tree: growing from secure sums of counts")
            oracle = SecureSumOracle(session, ring.sums, schema, items, traffic)
            model = fit_from_counts(
                oracle,
                schema,
                min_leaf=job.min_leaf,
                cf=job.cf,
                prune=job.prune,
                subtree_raising=job.subtree_raising,
                narrow=job.narrow,
            )
        ended = session.end()

    assert job.out is not None
    text = model.to_text()
    write_text_atomic(job.out, text + "\n")
    timer.since_start("total")
    report = {
        "mode": "distributed",
        "session_id": session.session_id,
        "parties": session.ring,
        "sum_mode": job.sum_mode,
        "nodes": model.n_nodes,
        "leaves": model.n_leaves,
        "depth": model.depth,
        "rounds": oracle.rounds,
        "counts_summed": oracle.counts_summed,
        "seconds": timer.rounded(),
        "leader_bytes": {"sent": traffic.sent, "received": traffic.received},
        "party_bytes": {
            n: {"sent": r.bytes_sent, "received": r.bytes_received} for n, r in ended.items()
        },
        "output": str(job.out),
    }
    if job.report is not None:
        write_json_atomic(job.report, report)
    return report


def load_c45_job(file: JobFile) -> C45LeaderJob:
    """A job.toml with a [c45] section: the features, numeric ones, the class, C4.5's options."""
    data, section = file.data, file.data["c45"]
    settings = {**ring_settings(data), "union_mode": "layered"}
    return C45LeaderJob(
        parties=file.parties,
        tls=file.tls,
        features=list(section["features"]),
        class_column=section["class"],
        out=file.required_path("out"),
        numeric=list(section["numeric"]),
        min_leaf=section["min_leaf"],
        cf=section["cf"],
        prune=section["prune"],
        subtree_raising=section["subtree_raising"],
        narrow=section["narrow"],
        report=file.path("report"),
        name=data["name"],
        **settings,
    )


def c45_summary(report: Report) -> list[Row]:
    """The summary table of a federated C4.5 run."""
    return [
        ("parties", ", ".join(report["parties"])),
        ("sum mode", report["sum_mode"]),
        ("tree", f"{report['nodes']} nodes, {report['leaves']} leaves, depth {report['depth']}"),
        ("secure sums", f"{report['rounds']} rounds, {report['counts_summed']} counts"),
        ("seconds", report["seconds"]),
        ("output", report["output"]),
    ]


KIND = LeaderKind(
    section="c45",
    title="federated C4.5",
    schema=C45_SCHEMA,
    load=load_c45_job,
    run=run_c45,
    summary=c45_summary,
    required={"out": "a file path for the tree"},
)
