"""The federated kACTUS job on the wire: ``KactusJob`` <-> the job's options, and a step <->
``KactusStepRequest``; the party's handler reads them with it and the leader writes them.

Iterations of one session (the leader and the party share them): the QID union is iteration 0;
every ``KactusStep`` is the next iteration, and its Sum (summed steps) and the union that
follows it (the C4.5 domains after the encode step, the release after the values step) run at
that same iteration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedanon.algorithms.kactus.api import NUMERIC_RULES
from fedanon.algorithms.kactus.federated_party import STEPS, Step
from fedanon.errors import FedanonError
from fedanon.federation.c45_job import queries_from_batch, queries_to_batch
from fedanon.protos import fedanon_v1_pb2 as pb

#: The secure set union of the parties' QID texts.
QID_UNION_ROUND = 0


@dataclass(frozen=True)
class KactusOptions:
    """What every party runs: the QIDs, the class, k, the marker and kACTUS's options."""

    qids: list[str]
    class_column: str
    k: int
    marker: str = "?"
    numeric: str = "median"
    prune: bool = True
    narrow: bool = False


def kactus_job_to_proto(options: KactusOptions) -> pb.KactusJob:
    """The job the leader sends in ``OpenSessionRequest.kactus``."""
    return pb.KactusJob(
        qids=options.qids,
        class_column=options.class_column,
        k=options.k,
        marker=options.marker,
        numeric=options.numeric,
        prune=options.prune,
        narrow=options.narrow,
    )


def kactus_job_from_proto(job: pb.KactusJob) -> KactusOptions:
    """The job's options; refuses a malformed job naming the field."""
    qids = list(job.qids)
    if not qids:
        raise FedanonError("the kACTUS job names no QID")
    if len(set(qids)) != len(qids):
        raise FedanonError("the kACTUS job names a QID twice")
    if not job.class_column or job.class_column in qids:
        raise FedanonError("the kACTUS job's class column must be named and not be a QID")
    if job.k < 2:
        raise FedanonError(f"the kACTUS job's k must be at least 2, got {job.k}")
    if job.numeric not in NUMERIC_RULES:
        raise FedanonError(f"the kACTUS job's numeric rule '{job.numeric}' is unknown")
    if not job.marker:
        raise FedanonError("the kACTUS job's marker is empty")
    return KactusOptions(
        qids, job.class_column, int(job.k), job.marker, job.numeric, job.prune, job.narrow
    )


def fingerprint_items(job: pb.KactusJob) -> list[str]:
    """The handshake fingerprint items (the leader computes the same from its job)."""
    return [
        f"kactus:qids={','.join(job.qids)}",
        f"kactus:class={job.class_column}",
        f"kactus:k={job.k}",
        f"kactus:marker={job.marker}",
        f"kactus:numeric={job.numeric}",
        f"kactus:prune={job.prune}",
        f"kactus:narrow={job.narrow}",
    ]


def step_to_proto(step: Step, ref: pb.SessionRef) -> pb.KactusStepRequest:
    """One step as the leader sends it."""
    return pb.KactusStepRequest(
        ref=ref,
        step=step.name,
        ints=[int(v) for v in step.ints],
        floats=[float(v) for v in step.floats],
        items=step.items,
        batch=queries_to_batch(step.queries) if step.queries else None,
        count_bits=step.count_bits,
    )


def step_from_proto(request: pb.KactusStepRequest, numeric: list[bool]) -> Step:
    """The leader's step, its name and queries checked (arguments: by the party's state)."""
    if request.step not in STEPS:
        raise FedanonError(f"unknown kACTUS step '{request.step[:32]}'")
    return Step(
        request.step,
        np.array(request.ints, dtype=np.int64),
        np.array(request.floats, dtype=np.float64),
        list(request.items),
        queries_from_batch(request.batch, len(numeric), numeric),
        request.count_bits,
    )
