"""The federated C4.5 job on the wire: ``C45Job`` <-> the learning task, count queries <->
``C45QueryBatch``, and the order of a session's iterations, which the leader and the party share.

One proto-conversion module per job kind (federation/lkc_job.py, drbt_job.py, this one): the
party's handler reads the job and the queries with it and the leader writes them, so neither
side imports the other.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedanon.errors import FedanonError
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.utility.c45_counts import (
    CLASSES,
    HISTOGRAMS,
    SPLIT,
    Condition,
    FeatureKinds,
    Path,
    Query,
)

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


def queries_to_batch(queries: Sequence[Query]) -> pb.C45QueryBatch:
    """A round's count queries as the leader sends them: each distinct path prefix once."""
    entries: dict[Path, int] = {}
    parent: list[int] = []
    tests: list[Condition] = []

    def entry(path: Path) -> int:
        if not path:
            return -1
        found = entries.get(path)
        if found is None:
            above = entry(path[:-1])
            found = entries[path] = len(parent)
            parent.append(above)
            tests.append(path[-1])
        return found

    paths = [entry(q.path) for q in queries]
    narrowed = [q.support is not None for q in queries]
    supports = [positions for q in queries for positions in q.support or ()]
    return pb.C45QueryBatch(
        parent=parent,
        test_feature=[f for f, _, _ in tests],
        test_branch=[b for _, b, _ in tests],
        test_threshold=[0.0 if t is None else t for _, _, t in tests],
        path=paths,
        kind=[QUERY_KINDS.index(q.kind) for q in queries],
        feature=[q.feature for q in queries],
        threshold=[0.0 if q.threshold is None else q.threshold for q in queries],
        narrowed=narrowed if any(narrowed) else [],
        support_sizes=[len(positions) for positions in supports],
        support=np.concatenate(supports).astype(np.int64).tolist() if supports else [],
    )


def queries_from_batch(
    batch: pb.C45QueryBatch, features: int, numeric: Sequence[bool]
) -> list[Query]:
    """The leader's queries, checked against the task's shape (a column of the wrong length,
    a parent that is not an earlier entry, a feature out of range or a support for a
    categorical feature is refused, not indexed); branches and positions are checked against
    the agreed domains when counted."""
    entries = len(batch.parent)
    if (
        not len(batch.test_feature)
        == len(batch.test_branch)
        == len(batch.test_threshold)
        == entries
    ):
        raise FedanonError("C4.5 queries: the path table's columns differ in length")
    count = len(batch.path)
    if not len(batch.kind) == len(batch.feature) == len(batch.threshold) == count:
        raise FedanonError("C4.5 queries: the query columns differ in length")
    if len(batch.narrowed) not in (0, count):
        raise FedanonError("C4.5 queries: the narrowed column differs in length")
    is_numeric = np.asarray(numeric, dtype=bool)
    parent = np.asarray(batch.parent, dtype=np.int64)
    test_feature = np.asarray(batch.test_feature, dtype=np.int64)
    if entries and not ((parent >= -1) & (parent < np.arange(entries))).all():
        raise FedanonError("C4.5 queries: a path entry's parent is not an earlier entry")
    for feature in np.unique(test_feature).tolist():
        _feature_in_range(feature, features)
    path_of = np.asarray(batch.path, dtype=np.int64)
    if count and not ((path_of >= -1) & (path_of < entries)).all():
        raise FedanonError("C4.5 queries: a query names a path entry that is not there")
    kinds = np.asarray(batch.kind, dtype=np.int64)
    if count and not ((kinds >= 0) & (kinds < len(QUERY_KINDS))).all():
        raise FedanonError("C4.5 queries: unknown query kind")
    paths: list[Path] = []
    numeric_test = is_numeric[test_feature].tolist() if entries else []
    for i, (up, f, b, t) in enumerate(
        zip(
            parent.tolist(),
            test_feature.tolist(),
            batch.test_branch,
            batch.test_threshold,
            strict=True,
        )
    ):
        test = (f, b, t if numeric_test[i] else None)
        paths.append((*paths[up], test) if up >= 0 else (test,))
    return _queries(batch, paths, path_of.tolist(), kinds.tolist(), features, numeric)


def _queries(
    batch: pb.C45QueryBatch,
    paths: list[Path],
    path_of: list[int],
    kinds: list[int],
    features: int,
    numeric: Sequence[bool],
) -> list[Query]:
    """The queries of a checked path table."""
    sizes = iter(batch.support_sizes)
    positions = np.asarray(batch.support, dtype=np.intp)
    start, numbers = 0, sum(numeric)
    queries = []
    for j, (at, kind, feature, threshold) in enumerate(
        zip(path_of, kinds, batch.feature, batch.threshold, strict=True)
    ):
        name = QUERY_KINDS[kind]
        support: tuple[np.ndarray, ...] | None = None
        if batch.narrowed and batch.narrowed[j]:
            if name != HISTOGRAMS:
                raise FedanonError("a narrowed query is a histogram with one support per number")
            parts = []
            for _ in range(numbers):
                size = next(sizes, None)
                if size is None or start + size > len(positions):
                    raise FedanonError("C4.5 queries: the supports are shorter than their sizes")
                parts.append(positions[start : start + size])
                start += size
            support = tuple(parts)
        split_on, split_at = -1, None
        if name == SPLIT:
            split_on = _feature_in_range(feature, features)
            split_at = threshold if numeric[split_on] else None
        queries.append(Query(paths[at] if at >= 0 else (), name, split_on, split_at, support))
    if next(sizes, None) is not None or start != len(positions):
        raise FedanonError("C4.5 queries: supports left over after the narrowed queries")
    return queries


def _feature_in_range(feature: int, features: int) -> int:
    if not 0 <= feature < features:
        raise FedanonError(f"C4.5 query names feature {feature} of {features}")
    return feature
