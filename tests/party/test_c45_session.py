"""The party's federated C4.5 session and admission, without daemons: the order of its
iterations, the checks on the leader's queries and domains, and what the policy sees.

Oracle for the counts: ``LocalOracle`` on the same table (the party's vector for a query is its
own table's counts); everything else is a refusal the party must make before it counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.federation.c45_job import c45_job_to_proto, queries_from_batch, queries_to_batch
from fedanon.packed_counts import unpack_fields
from fedanon.party.errors import NotExpected, ProtocolError
from fedanon.party.handlers.c45_session import C45Session
from fedanon.party.policy import InvalidJob, Policy, PolicyRefusal, c45_request, check_job
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.utility.c45_counts import (
    HISTOGRAMS,
    SPLIT,
    FeatureKinds,
    LocalOracle,
    Query,
    agree_schema,
    local_domains,
)

KINDS = FeatureKinds(["ward", "age"], frozenset({"age"}))
SID = "ab" * 16
TABLE = pd.DataFrame(
    {
        "ward": ["a", "b", "a", "c", "b"],
        "age": ["30", "41", "52", "30", "67"],
        "outcome": ["y", "n", "y", "n", "n"],
    }
)
OTHER = pd.DataFrame({"ward": ["d"], "age": ["99"], "outcome": ["y"]})


def _session() -> C45Session:
    return C45Session(SID, KINDS, "outcome", TABLE, ["h1", "h2"], "h1", pb.SUM_MODE_RING)


def _items(*tables: pd.DataFrame) -> list[bytes]:
    """The union's items for `tables`, as the core's `agree_schema` encodes them."""
    sets = [local_domains(t[KINDS.features], t["outcome"], KINDS) for t in tables]
    captured: list[bytes] = []

    def union(encoded: Sequence[Sequence[bytes]]) -> list[bytes]:
        captured.extend(sorted({v for values in encoded for v in values}))
        return captured

    agree_schema(KINDS, sets, union)
    return captured


def _count(session: C45Session, iteration: int, queries: list[Query], items: list[bytes]) -> int:
    return session.count(
        pb.C45CountRequest(
            ref=pb.SessionRef(session_id=SID, iteration=iteration),
            batch=queries_to_batch(queries),
            domain_items=items,
        )
    )


def _sum(session: C45Session, iteration: int) -> pb.SumRequest:
    return pb.SumRequest(ref=pb.SessionRef(session_id=SID, iteration=iteration))


def test_rounds_count_the_partys_own_table_and_sum_once_each() -> None:
    session = _session()
    items = _items(TABLE, OTHER)
    queries = [Query((), HISTOGRAMS), Query(((1, 1, 40.0),), SPLIT, 0)]
    length = _count(session, 1, queries, items)
    schema = agree_schema(KINDS, [], lambda _sets: items)
    expected = LocalOracle(TABLE[KINDS.features], TABLE["outcome"], schema).count(queries)
    assert length == expected.size
    assert session.contribution(_sum(session, 1)).tolist() == expected.tolist()
    with pytest.raises(NotExpected):  # a second Sum of the same round: nothing pending
        session.contribution(_sum(session, 1))
    with pytest.raises(ProtocolError, match="once"):  # the domains come with round 1 only
        _count(session, 2, queries, items)
    assert _count(session, 2, queries, []) == expected.size


def test_the_party_refuses_out_of_order_rounds_and_sums_without_queries() -> None:
    session = _session()
    items = _items(TABLE)
    with pytest.raises(NotExpected):  # a Sum before any queries
        session.contribution(_sum(session, 0))
    with pytest.raises(NotExpected, match="iteration 2"):  # round 2 before round 1
        _count(session, 2, [Query((), HISTOGRAMS)], items)
    _count(session, 1, [Query((), HISTOGRAMS)], items)
    with pytest.raises(NotExpected, match="not summed"):  # round 2 before round 1's Sum
        _count(session, 2, [Query((), HISTOGRAMS)], [])
    with pytest.raises(NotExpected):  # no union once counting started
        session.release_table()


def _batch(**columns: Any) -> pb.C45QueryBatch:
    """One query at the root (histograms) unless `columns` say otherwise."""
    fields: dict[str, Any] = {"path": [-1], "kind": [0], "feature": [-1], "threshold": [0.0]}
    return pb.C45QueryBatch(**{**fields, **columns})


@pytest.mark.parametrize(
    "batch",
    [
        # a test on a feature out of range
        _batch(parent=[-1], test_feature=[7], test_branch=[0], test_threshold=[0.0], path=[0]),
        # a path entry whose parent is itself, or a later entry
        _batch(parent=[0], test_feature=[0], test_branch=[0], test_threshold=[0.0], path=[0]),
        _batch(
            parent=[1, -1],
            test_feature=[0, 0],
            test_branch=[0, 1],
            test_threshold=[0.0, 0.0],
            path=[0],
        ),
        # a path table whose columns differ in length
        _batch(parent=[-1], test_feature=[0], test_branch=[], test_threshold=[0.0], path=[0]),
        # a query naming a path entry that is not there
        _batch(path=[3]),
        # query columns of different lengths
        _batch(kind=[0, 0]),
        # a split on no feature, an unknown kind
        _batch(kind=[1], feature=[-1]),
        _batch(kind=[1], feature=[2]),
        _batch(kind=[9]),
        # narrowed without its support, a narrowed split, supports left over
        _batch(narrowed=[True]),
        _batch(kind=[1], feature=[0], narrowed=[True], support_sizes=[1], support=[0]),
        _batch(support_sizes=[1], support=[0]),
        _batch(narrowed=[True, False]),
        # a narrowed column shorter than the queries, a path entry one past the (empty)
        # table, the first kind past the known ones
        _batch(
            path=[-1, -1], kind=[0, 0], feature=[-1, -1], threshold=[0.0, 0.0], narrowed=[False]
        ),
        _batch(path=[0]),
        _batch(kind=[3]),
    ],
)
def test_malformed_queries_are_refused_before_counting(batch: pb.C45QueryBatch) -> None:
    session = _session()
    request = pb.C45CountRequest(
        ref=pb.SessionRef(session_id=SID, iteration=1), batch=batch, domain_items=_items(TABLE)
    )
    with pytest.raises(FedanonError):
        session.count(request)
    assert session.pending is None and session.next_iteration == 0


def test_domains_that_miss_the_partys_values_are_refused() -> None:
    with pytest.raises(ProtocolError, match="miss values"):
        _count(_session(), 1, [Query((), HISTOGRAMS)], _items(OTHER))


def test_the_union_carries_the_partys_distinct_values_only() -> None:
    released = _session().release_table()
    assert list(released.columns) == ["item"]
    assert sorted(bytes.fromhex(x) for x in released["item"]) == _items(TABLE)
    assert len(released) == 3 + 4 + 2  # wards, ages, classes: no record, no multiplicity


def _request(**job: object) -> pb.OpenSessionRequest:
    request = pb.OpenSessionRequest(c45=c45_job_to_proto(KINDS, "outcome"), ring=["h1", "h2"])
    for key, value in job.items():
        setattr(request.c45, key, value)
    return request


def test_admission_names_every_column_whose_values_leave_raw() -> None:
    job = c45_request(_request(), list(TABLE.columns))
    assert job.kind == "c45" and set(job.released) == set(job.raw) == {"ward", "age", "outcome"}
    with pytest.raises(PolicyRefusal, match="'age' raw"):
        check_job(Policy(never_raw=("age",)), job, "h1", None, None)
    with pytest.raises(PolicyRefusal, match="job kind 'c45'"):
        check_job(Policy(job_kinds=("lkc",)), job, "h1", None, None)
    check_job(Policy(), job, "h1", None, None)


@pytest.mark.parametrize(
    ("job", "columns", "message"),
    [
        ({"class_column": "ward"}, ["ward", "age", "outcome"], "class column"),
        ({"class_column": ""}, ["ward", "age", "outcome"], "class column"),
        ({}, ["ward", "outcome"], "'age' is not a column"),
    ],
)
def test_admission_refuses_a_task_it_cannot_read(
    job: dict[str, object], columns: list[str], message: str
) -> None:
    with pytest.raises(InvalidJob, match=message):
        c45_request(_request(**job), columns)


def test_a_batch_sends_each_path_prefix_once_and_decodes_every_query() -> None:
    """Queries sharing prefixes travel as one path table (a row per distinct prefix) and come
    back as the very queries sent, supports and thresholds included."""
    prefix = ((0, 1, None), (1, 0, 41.5))
    queries = [
        Query(prefix, SPLIT, 1, 35.0),
        Query((*prefix, (0, 2, None)), HISTOGRAMS, support=(np.array([0, 3]),)),
        Query((*prefix, (0, 0, None)), HISTOGRAMS, support=(np.array([5]),)),
        Query(prefix[:1], SPLIT, 0),
        Query((), "classes"),
    ]
    batch = queries_to_batch(queries)
    assert len(batch.parent) == 4  # (0,1), (0,1)(1,0), and the two children: not 8 tests
    decoded = queries_from_batch(batch, 2, [False, True])
    assert decoded == queries  # paths, kinds, features, thresholds (support is not compared)
    assert [None if q.support is None else [s.tolist() for s in q.support] for q in decoded] == [
        None,
        [[0, 3]],
        [[5]],
        None,
        None,
    ]


def test_counts_travel_packed_in_the_leaders_field_width() -> None:
    """With ``count_bits`` the party's vector holds 64 // bits counts per word, which unpack
    to its own counts; a count wider than the field is refused before anything is pending."""
    session = _session()
    items = _items(TABLE, OTHER)
    queries = [Query((), HISTOGRAMS), Query(((1, 1, 40.0),), SPLIT, 0)]
    schema = agree_schema(KINDS, [], lambda _sets: items)
    expected = LocalOracle(TABLE[KINDS.features], TABLE["outcome"], schema).count(queries)
    ref = pb.SessionRef(session_id=SID, iteration=1)
    request = pb.C45CountRequest(
        ref=ref, batch=queries_to_batch(queries), domain_items=items, count_bits=3
    )
    assert session.count(request) == -(-expected.size // 21)
    words = session.contribution(_sum(session, 1))
    assert unpack_fields(words, 3, expected.size).tolist() == expected.tolist()
    narrow = pb.C45CountRequest(
        ref=pb.SessionRef(session_id=SID, iteration=2),
        batch=queries_to_batch(queries),
        count_bits=1,  # the root's class counts (2 and 3) do not fit 1 bit
    )
    with pytest.raises(ProtocolError, match="count_bits 1"):
        session.count(narrow)
    assert session.pending is None and session.next_iteration == 1


def test_support_positions_beyond_the_declared_sizes_are_refused() -> None:
    """A narrowed histogram takes one support per number, each as long as its size says; a
    position past the last size is refused, not dropped."""
    exact = _batch(narrowed=[True], support_sizes=[1], support=[0])
    (query,) = queries_from_batch(exact, 2, [False, True])
    assert query.support is not None and [s.tolist() for s in query.support] == [[0]]
    extra = _batch(narrowed=[True], support_sizes=[1], support=[0, 1])
    with pytest.raises(FedanonError, match="supports left over"):
        queries_from_batch(extra, 2, [False, True])
