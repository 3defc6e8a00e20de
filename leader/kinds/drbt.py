"""The leader's side of DRBT over vertically partitioned parties (thesis ch. 7.4).

Steps: open the session everywhere (a DRBT job through the same daemons and the same session
plumbing as LKC, leader/session.py), check that the parties' attribute sets are disjoint, take
the common object-id list from the first party and send it to every party (a party lacking ids
reports how many, and the session aborts with the counts per party), collect every party's
projected block (rows in id-list order), join the blocks by column in ring order - the result is
D times a block-diagonal R - cluster it with K-means, and, if asked, send the cluster of every
object back to the parties.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import grpc
import numpy as np
import pandas as pd

from fedanon.algorithms.drbt.kmeans import kmeans
from fedanon.algorithms.drbt.matrices import MATRICES, secure_rng
from fedanon.configschema import Flag, Integer, Key, Table, Text
from fedanon.errors import FedanonError
from fedanon.federation.config import Hop
from fedanon.federation.drbt_job import drbt_job_to_proto, fingerprint_items
from fedanon.federation.tls import TLSFiles
from fedanon.leader.federation import describe_rpc_error
from fedanon.leader.kind import JobFile, LeaderKind, PhaseTimer, Report, Row
from fedanon.leader.session import Session
from fedanon.outputs import CommandOutputs
from fedanon.protos import fedanon_v1_pb2 as pb

DRBT_SCHEMA = Table(
    {
        "id_column": Key(Text(), required=True),
        "matrix": Key(Text(choices=MATRICES), default="sparse"),
        "k_dims": Key(Integer(0, 2**31 - 1), default=0),
        "rescale": Key(Flag(), default=False),
        "clusters": Key(Integer(1, 2**31 - 1), default=3),
        "send_assignment": Key(Flag(), default=False),
    }
)


@dataclass
class DRBTLeaderJob:
    """A vertical DRBT run: parties, projection settings, clustering and outputs."""

    kind: ClassVar[str] = "drbt"

    parties: list[Hop]
    tls: TLSFiles | None
    out: Path
    id_column: str
    matrix: str = "sparse"
    k_dims: int = 0
    rescale: bool = False
    clusters: int = 3
    send_assignment: bool = False
    report: Path | None = None
    name: str = "leader"
    rpc_seconds: float = 120.0
    relay_listen: str | None = None  # transport = "outbound": the relay's address
    seed: int | None = None
    extra_report: dict[str, Any] = field(default_factory=dict)

    def to_proto(self) -> pb.DRBTJob:
        return drbt_job_to_proto(self.id_column, self.matrix, self.k_dims, self.rescale)

    def check(self) -> None:
        if self.matrix not in MATRICES:
            raise FedanonError(f"unknown matrix '{self.matrix}' ({', '.join(MATRICES)})")
        if len(self.parties) < 1:
            raise FedanonError("a DRBT run needs at least one party")
        if self.clusters < 1:
            raise FedanonError("--clusters must be at least 1")


def _matrix(message: pb.Matrix, party: str, rows: int) -> np.ndarray:
    if message.dtype != "<f8" or len(message.data) != 8 * message.rows * message.cols:
        raise FedanonError(f"party {party}: malformed projected block")
    if message.rows != rows:
        raise FedanonError(f"party {party}: {message.rows} projected rows, expected {rows}")
    return np.frombuffer(message.data, dtype="<f8").reshape(message.rows, message.cols)


def run_drbt(
    job: DRBTLeaderJob, on_clusters: Callable[[list[str], np.ndarray], None] | None = None
) -> dict[str, Any]:
    """Run one vertical DRBT session; write the clustered projected release and the report.

    `on_clusters` receives the common ids and their cluster labels in id-list order (the
    release itself is shuffled and carries tokens only); the simulation uses it to score the
    clustering against centralized K-means.
    """
    job.check()
    outputs = CommandOutputs()
    outputs.claim("out", job.out)
    outputs.claim("report", job.report)
    timer = PhaseTimer()
    session = Session(job)
    with session:
        opened = session.handshake(
            fingerprint_items(job.to_proto()), pb.OpenSessionRequest(drbt=job.to_proto())
        )
        owner: dict[str, str] = {}
        for name in session.ring:
            for attribute in opened[name].attributes:
                if attribute in owner:
                    raise FedanonError(
                        f"handshake: attribute '{attribute}' is held by both "
                        f"{owner[attribute]} and {name}"
                    )
                owner[attribute] = name
        first = session.ring[0]
        try:
            ids = list(
                session.stubs[first]
                .Ids(pb.IdsRequest(ref=session.ref(), send_yours=True), timeout=job.rpc_seconds)
                .ids
            )
        except grpc.RpcError as exc:
            raise describe_rpc_error(exc, first, "id list") from exc
        missing = session.fan_out(
            "id list",
            lambda n, s: s.Ids(pb.IdsRequest(ref=session.ref(), ids=ids), timeout=job.rpc_seconds),
        )
        lacking = {n: r.missing for n, r in missing.items() if r.missing}
        if lacking:
            counts = ", ".join(f"party {n} lacks {c} of {len(ids)} ids" for n, c in lacking.items())
            raise FedanonError(f"id list: {counts}")
        if job.clusters > len(ids):
            raise FedanonError(f"clusters = {job.clusters} exceeds the {len(ids)} objects")
        timer.since_start("handshake")

        with timer.phase("projection"):
            replies = session.fan_out(
                "projection",
                lambda n, s: s.Project(
                    pb.ProjectRequest(ref=session.ref()), timeout=job.rpc_seconds
                ),
            )
            blocks = [_matrix(replies[n].block, n, len(ids)) for n in session.ring]
            joined = np.hstack(blocks)

        with timer.phase("clustering"):
            seed = job.seed if job.seed is not None else secrets.randbits(64)
            clustering = kmeans(joined, job.clusters, np.random.default_rng(seed), n_init=10)
        if job.send_assignment:
            labels = [int(x) for x in clustering.labels]
            session.fan_out(
                "assignment",
                lambda n, s: s.Assign(
                    pb.AssignRequest(ref=session.ref(), clusters=labels), timeout=job.rpc_seconds
                ),
            )
        ended = session.end()

    if on_clusters is not None:
        on_clusters(ids, clustering.labels)
    # Rows in a secret random order, so that a release row cannot be matched to an id by its
    # position in the id list.
    order = secure_rng().permutation(len(ids))
    release = pd.DataFrame(joined[order], columns=[f"p{i + 1}" for i in range(joined.shape[1])])
    release.insert(0, "token", [secrets.token_hex(8) for _ in range(len(release))])
    release["cluster"] = clustering.labels[order]
    with outputs.writing() as staged:
        staged.table(job.out, release)
        timer.since_start("total")
        report = {
            "mode": "drbt-vertical",
            "session_id": session.session_id,
            "parties": {
                n: {
                    "attributes": list(opened[n].attributes),
                    "kept_dimensions": blocks[i].shape[1],
                    "bytes_sent": ended[n].bytes_sent,
                }
                for i, n in enumerate(session.ring)
            },
            "objects": len(ids),
            "dimensions": joined.shape[1],
            "matrix": job.matrix,
            "clusters": job.clusters,
            "cluster_sizes": np.bincount(clustering.labels, minlength=job.clusters).tolist(),
            "assignment_sent": job.send_assignment,
            "seconds": timer.rounded(),
            "output": str(job.out),
            **job.extra_report,
        }
        if job.report is not None:
            staged.json(job.report, report)
    return report


def load_drbt_job(file: JobFile) -> DRBTLeaderJob:
    """A job.toml with a [drbt] section instead of [lkc]."""
    data, section = file.data, file.data["drbt"]
    return DRBTLeaderJob(
        parties=file.parties,
        tls=file.tls,
        out=file.required_path("out"),
        id_column=section["id_column"],
        matrix=section["matrix"],
        k_dims=section["k_dims"],
        rescale=section["rescale"],
        clusters=section["clusters"],
        send_assignment=section["send_assignment"],
        report=file.path("report"),
        name=data["name"],
        rpc_seconds=data["timeouts"]["rpc_seconds"] or 120.0,
    )


def drbt_summary(report: Report) -> list[Row]:
    """The summary table of a vertical DRBT run."""
    return [
        ("parties", ", ".join(report["parties"])),
        ("objects", report["objects"]),
        ("dimensions", report["dimensions"]),
        ("cluster sizes", report["cluster_sizes"]),
        ("seconds", report["seconds"]),
        ("output", report["output"]),
    ]


KIND = LeaderKind(
    section="drbt",
    title="vertical DRBT",
    schema=DRBT_SCHEMA,
    load=load_drbt_job,
    run=lambda job, _progress: run_drbt(job),
    summary=drbt_summary,
    required={"out": "a file path"},
)
