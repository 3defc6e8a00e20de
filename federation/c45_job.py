"""The federated C4.5 job on the wire: ``C45Job`` <-> the learning task, count queries <->
``C45Query``, and the order of a session's iterations, which the leader and the party share.

One proto-conversion module per job kind (federation/lkc_job.py, drbt_job.py, this one): the
party's handler reads the job and the queries with it and the leader writes them, so neither
side imports the other.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from fedanon.errors import FedanonError
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.utility.c45_counts import CLASSES, HISTOGRAMS, SPLIT, FeatureKinds, Query

#: The secure set union of the agreed domains is iteration 0; count round r (r >= 1) is one
#: ``C45Count`` then one ``Sum``, both at iteration r.
UNION_ROUND = 0
QUERY_KINDS = (HISTOGRAMS, SPLIT, CLASSES)


def c45_job_to_proto(kinds: FeatureKinds, class_column: str) -> pb.C45Job:
    """The job the leader sends in ``OpenSessionRequest.c45``."""
    numeric = [f for f in kinds.features if f in kinds.numeric]
    return pb.C45Job(features=list(kinds.features), numeric=numeric, class_column=class_column)


def c45_job_from_proto(job: pb.C45Job) -> tuple[FeatureKinds, str]:
    """The learning task and the class column; refuses a malformed job naming the field."""
    features = list(job.features)
    if not features:
        raise FedanonError("the C4.5 job names no feature")
    if len(set(features)) != len(features):
        raise FedanonError("the C4.5 job names a feature twice")
    unknown = [n for n in job.numeric if n not in features]
    if unknown:
        raise FedanonError(f"the C4.5 job's numeric column '{unknown[0]}' is not a feature")
    if not job.class_column or job.class_column in features:
        raise FedanonError("the C4.5 job's class column must be named and not be a feature")
    return FeatureKinds(features, frozenset(job.numeric)), job.class_column


def fingerprint_items(job: pb.C45Job) -> list[str]:
    """The handshake fingerprint items (the leader computes the same from its job)."""
    return [
        f"c45:features={','.join(job.features)}",
        f"c45:numeric={','.join(job.numeric)}",
        f"c45:class={job.class_column}",
    ]


@functools.lru_cache(maxsize=1 << 16)
def _condition(feature: int, branch: int, threshold: float | None) -> pb.C45Condition:
    """One test outcome's message, made once: the paths of a level share their prefixes, and
    a repeated field copies what it is given, so the cached message is never changed."""
    return pb.C45Condition(
        feature=feature,
        branch=branch,
        numeric=threshold is not None,
        threshold=0.0 if threshold is None else threshold,
    )


def query_to_proto(query: Query) -> pb.C45Query:
    """One count query as the leader sends it."""
    message = pb.C45Query(
        path=[_condition(f, b, t) for f, b, t in query.path],
        kind=query.kind,
        feature=query.feature,
        has_threshold=query.threshold is not None,
        threshold=0.0 if query.threshold is None else query.threshold,
        narrowed=query.support is not None,
    )
    for positions in query.support or ():
        message.support.add(positions=np.asarray(positions, dtype=np.int64).tolist())
    return message


def queries_from_proto(
    messages: Sequence[pb.C45Query], features: int, numeric: Sequence[bool]
) -> list[Query]:
    """The leader's queries, checked against the task's shape (a feature out of range or a
    support for a categorical feature is refused, not indexed); branches and positions are
    checked against the agreed domains when counted."""
    queries = []
    for message in messages:
        if message.kind not in QUERY_KINDS:
            raise FedanonError(f"unknown C4.5 query kind '{message.kind}'")
        path = []
        for c in message.path:
            _feature_in_range(c.feature, features)
            if c.numeric != numeric[c.feature]:
                raise FedanonError(f"condition on feature {c.feature}: wrong kind of test")
            path.append((c.feature, c.branch, c.threshold if c.numeric else None))
        support: tuple[np.ndarray, ...] | None = None
        if message.narrowed:
            if message.kind != HISTOGRAMS or len(message.support) != sum(numeric):
                raise FedanonError("a narrowed query is a histogram with one support per number")
            support = tuple(np.asarray(s.positions, dtype=np.intp) for s in message.support)
        feature, threshold = -1, None
        if message.kind == SPLIT:
            feature = _feature_in_range(message.feature, features)
            if message.has_threshold != numeric[feature]:
                raise FedanonError(f"split on feature {feature}: wrong kind of test")
            threshold = message.threshold if message.has_threshold else None
        queries.append(Query(tuple(path), message.kind, feature, threshold, support))
    return queries


def _feature_in_range(feature: int, features: int) -> int:
    if not 0 <= feature < features:
        raise FedanonError(f"C4.5 query names feature {feature} of {features}")
    return feature
