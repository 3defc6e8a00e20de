"""The party's federated kACTUS session and admission, without daemons: the order of its
steps, the refusals it must make before touching its table, and what the policy sees.

Oracles: a party's `encode` answer is its own record count; every refusal is named.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.kactus.federated_party import (
    Step,
    decode_give,
    decode_tree,
    pre_order,
    qid_item,
)
from fedanon.algorithms.kactus.tree import place_records
from fedanon.algorithms.tabular import encode_qid
from fedanon.errors import FedanonError
from fedanon.federation.kactus_job import KactusOptions, kactus_job_to_proto, step_to_proto
from fedanon.party.errors import NotExpected
from fedanon.party.handlers.kactus_session import KactusSession
from fedanon.party.policy import InvalidJob, Policy, PolicyRefusal, check_job, kactus_request
from fedanon.protos import fedanon_v1_pb2 as pb

SID = "cd" * 16
TABLE = pd.DataFrame(
    {
        "ward": ["a", "b", "a", "c", "b", "a"],
        "age": ["30", "41", "52", "30", "67", "45"],
        "outcome": ["y", "n", "y", "n", "n", "y"],
    }
)
OPTIONS = KactusOptions(["ward", "age"], "outcome", 2)


def _session() -> KactusSession:
    return KactusSession(SID, OPTIONS, TABLE, ["h1", "h2"], "h1", pb.SUM_MODE_RING)


def _request(step: Step, iteration: int) -> pb.KactusStepRequest:
    return step_to_proto(step, pb.SessionRef(session_id=SID, iteration=iteration))


def _items() -> list[bytes]:
    return [qid_item(j, str(v)) for j, c in enumerate(["ward", "age"]) for v in set(TABLE[c])]


def test_encode_comes_first_and_its_vector_waits_for_the_sum() -> None:
    session = _session()
    with pytest.raises(NotExpected, match="encode step comes first"):
        session.step(_request(Step("groups", np.array([0])), 1))
    assert session.step(_request(Step("encode", items=_items()), 1)) == 1
    with pytest.raises(NotExpected, match="not summed"):
        session.step(_request(Step("count"), 2))
    vector = session.contribution(pb.SumRequest(ref=pb.SessionRef(session_id=SID, iteration=1)))
    assert vector.tolist() == [len(TABLE)]
    with pytest.raises(NotExpected, match="encode step comes first"):
        session.step(_request(Step("encode", items=_items()), 2))


def test_a_stale_iteration_and_an_unknown_step_are_refused() -> None:
    session = _session()
    with pytest.raises(NotExpected, match="iteration 3"):
        session.step(_request(Step("encode", items=_items()), 3))
    session.step(_request(Step("encode", items=_items()), 1))
    session.contribution(pb.SumRequest(ref=pb.SessionRef(session_id=SID, iteration=1)))
    request = _request(Step("groups"), 2)
    request.step = "dump-table"
    with pytest.raises(FedanonError, match="unknown kACTUS step"):
        session.step(request)


def test_a_qid_union_missing_this_partys_values_is_refused() -> None:
    session = _session()
    with pytest.raises(FedanonError, match="misses values"):
        session.step(_request(Step("encode", items=_items()[1:]), 1))


def test_group_statistics_only_for_qids_the_group_tests_by_inequalities() -> None:
    """A median or mean probe is refused for a QID the group's path does not test, or tests
    by equality: the leader may not learn such a QID's distribution in a group."""
    session = _session()
    party = session.party
    party.answer(Step("encode", items=_items()))
    columns = party.columns
    # A tree by hand: the root tests ward (three categories), no record placed yet.
    ward = columns[0]
    ints = [0, 0, len(ward.categories), *range(len(ward.categories))]
    ints += [-1, 0, 0] * len(ward.categories)
    tree = decode_tree(np.array(ints), np.full(1 + len(ward.categories), np.nan), columns)
    root, party.residual = place_records(tree, columns)
    party.nodes = pre_order(root)
    party.answer(Step("groups", np.array([1, -1])))
    for pair in ([0, 1], [1, 1], [0, 0]):  # ward by equality; age untested; the root's rest
        with pytest.raises(FedanonError, match="without a group value"):
            party.answer(Step("median", np.array(pair), np.array([40.0])))
        with pytest.raises(FedanonError, match="without a group value"):
            party.answer(Step("mean", np.array(pair)))
    with pytest.raises(FedanonError, match="out of range"):
        party.answer(Step("mean", np.array([5, 1])))


def test_below_counts_tags_per_probe_and_refuses_uneven_probes() -> None:
    """The cut-off search sends the same number of probes for every tagged node, node by
    node; each answer is that node's number of this party's tags below the probe (the tags
    are the party's own: the oracle counts them directly)."""
    session = _session()
    party = session.party
    party.answer(Step("encode", items=_items()))
    columns = party.columns
    ward = columns[0]
    ints = [0, 0, len(ward.categories), *range(len(ward.categories))]
    ints += [-1, 0, 0] * len(ward.categories)
    tree = decode_tree(np.array(ints), np.full(1 + len(ward.categories), np.nan), columns)
    root, party.residual = place_records(tree, columns)
    party.nodes = pre_order(root)
    party.answer(Step("tag", np.array([1, 2])))
    probes = np.array([0, 2**61, 2**62, 5, 2**60, 2**62])
    got = party.answer(Step("below", probes))
    tags = party.tags
    expected = [int((tags[i // 3] < p).sum()) for i, p in enumerate(probes)]
    assert got is not None and got.tolist() == expected
    assert expected[2] == len(tags[0]) and expected[5] == len(tags[1])
    for uneven in (probes[:5], probes[:0]):
        with pytest.raises(FedanonError, match="same number of probes"):
            party.answer(Step("below", uneven))


def test_a_malformed_tree_or_give_is_refused() -> None:
    columns = [encode_qid(TABLE["ward"], "ward"), encode_qid(TABLE["age"], "age")]
    with pytest.raises(FedanonError, match="wrong kind of test"):
        decode_tree(np.array([1, 0, 1, 0, -1, 0, 0]), np.zeros(2), columns)
    with pytest.raises(FedanonError, match="unknown category"):
        decode_tree(np.array([0, 0, 1, 7, -1, 0, 0]), np.zeros(2), columns)
    with pytest.raises(FedanonError, match="cut short"):
        decode_tree(np.array([0, 0, 2, 0]), np.zeros(3), columns)
    with pytest.raises(FedanonError, match="cut short"):
        decode_give(np.array([0, 2, 1, 5]))


def test_admission_names_every_column_raw_and_holds_k_to_the_floor() -> None:
    request = pb.OpenSessionRequest(kactus=kactus_job_to_proto(OPTIONS), ring=["h1", "h2"])
    job = kactus_request(request, list(TABLE.columns))
    assert job.kind == "kactus" and set(job.raw) == set(job.released) == set(TABLE.columns)
    with pytest.raises(PolicyRefusal, match="K=2 below its floor min_K=5"):
        check_job(Policy(min_K=5), job, "h1", None, None)
    with pytest.raises(PolicyRefusal, match="never releases raw"):
        check_job(Policy(never_raw=("age",)), job, "h1", None, None)
    with pytest.raises(PolicyRefusal, match="job kind 'kactus'"):
        check_job(Policy(job_kinds=("lkc",)), job, "h1", None, None)
    bad = pb.OpenSessionRequest(
        kactus=kactus_job_to_proto(KactusOptions(["ward", "outcome"], "outcome", 2))
    )
    with pytest.raises(InvalidJob, match="class column"):
        kactus_request(bad, list(TABLE.columns))
