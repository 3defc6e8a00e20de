"""The LKC job on the wire: conversion between `LKCJobSpec` and its protobuf message.

The job specification itself is core (the schema and fingerprint both sides derive from it);
only its wire form needs the generated protobuf code, so the conversion lives here and the core
never imports protos.
"""

from __future__ import annotations

from fractions import Fraction

from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.algorithms.tds.suppression import parse_suppression_share
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.schema import LKCParams
from fedanon.taxonomy.files import SensitiveValue


def lkc_job_to_proto(spec: LKCJobSpec) -> pb.LKCJob:
    """The job as the leader announces it in `OpenSessionRequest.lkc`."""
    return pb.LKCJob(
        L=spec.params.L,
        K=spec.params.K,
        C=str(spec.params.C),
        score=spec.score,
        qids=spec.qids,
        sensitive=[pb.SensitiveValue(column=s.column, value=s.value) for s in spec.sensitive],
        class_column=spec.class_column or "",
        class_values=spec.class_values,
        drop_columns=spec.drop,
        suppress=str(spec.suppress) if spec.suppress else "",
        drop_suppressed=spec.suppressed_mode == "drop",
    )


def lkc_job_from_proto(job: pb.LKCJob) -> LKCJobSpec:
    """The job a party received (C travels as an exact fraction string)."""
    return LKCJobSpec(
        params=LKCParams.of(job.L, job.K, Fraction(job.C)),
        score=job.score,
        qids=list(job.qids),
        sensitive=[SensitiveValue(s.column, s.value) for s in job.sensitive],
        class_column=job.class_column or None,
        class_values=list(job.class_values),
        drop=list(job.drop_columns),
        suppress=parse_suppression_share(job.suppress or None),
        suppressed_mode="drop" if job.drop_suppressed else "root",
    )
