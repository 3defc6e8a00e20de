"""The randomization job on the wire: ``RandomizeJob`` <-> `RandomizeSpec`, and the order of
its session's iterations, which the leader and the party must agree on.

One proto-conversion module per job kind (federation/lkc_job.py, drbt_job.py, this one): the
party's handler reads the job with it and the leader writes it, so neither side imports the
other.
"""

from __future__ import annotations

from fedanon.algorithms.randomization.jobspec import RandomizeSpec
from fedanon.protos import fedanon_v1_pb2 as pb

# Iterations of a randomization session: the histogram sum, the randomization, the union.
SUM_ROUND, RANDOMIZE_ROUND, UNION_ROUND = 0, 1, 2


def spec_to_proto(spec: RandomizeSpec) -> pb.RandomizeJob:
    """The job the leader sends in ``OpenSessionRequest.randomize``."""
    p_values = [] if isinstance(spec.p, str) else list(spec.p)
    return pb.RandomizeJob(
        qids=[
            pb.QIDDomain(column=c, values=list(d))
            for c, d in zip(spec.qids, spec.domains, strict=True)
        ],
        method=spec.method,
        attrs=spec.attrs or 0,
        p=spec.p_name,
        p_values=p_values,
        keep_at_parties=spec.keep_at_parties,
    )


def spec_from_proto(job: pb.RandomizeJob) -> RandomizeSpec:
    """The job a party received, checked as the leader's loader checks it."""
    p: str | tuple[float, ...] = tuple(job.p_values) if job.p == "custom" else job.p
    spec = RandomizeSpec(
        tuple(q.column for q in job.qids),
        tuple(tuple(q.values) for q in job.qids),
        job.method,
        job.attrs or None,
        p,
        job.keep_at_parties,
    )
    spec.check()
    return spec
