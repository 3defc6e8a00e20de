"""A hospital's policy (party/policy.py) against the jobs that would slip past a weakened rule:
an empty QID list allows no QID; what leaves the party in any form (generalized QIDs, records
through the union) counts as released; every refusal leaves an audit line."""

from __future__ import annotations

import json
import logging

import pytest

from fedanon.party.handlers import HANDLERS
from fedanon.party.policy import JobRequest, Policy, PolicyRefusal, admit, check_job, read_request
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.party.fakes import Aborted, Context

COLUMNS = ["patient_id", "age", "sex", "diagnosis"]
READERS = {kind: handler.admission for kind, handler in HANDLERS.items()}
RING = ["hospital-a", "hospital-b"]


def lkc(qids: list[str], drop: list[str]) -> pb.OpenSessionRequest:
    return pb.OpenSessionRequest(
        ref=pb.SessionRef(session_id="ab" * 16),
        lkc=pb.LKCJob(L=2, K=5, C="1/2", score="infogain", qids=qids, drop_columns=drop),
        ring=RING,
    )


def randomize(keep_at_parties: bool) -> pb.OpenSessionRequest:
    return pb.OpenSessionRequest(
        ref=pb.SessionRef(session_id="cd" * 16),
        randomize=pb.RandomizeJob(
            qids=[pb.QIDDomain(column="sex", values=["f", "m"])],
            method="enhanced",
            attrs=1,
            keep_at_parties=keep_at_parties,
        ),
        ring=RING,
    )


def job(request: pb.OpenSessionRequest) -> JobRequest:
    read = read_request(request, COLUMNS, READERS)
    assert read is not None
    return read


def verdict(policy: Policy, request: pb.OpenSessionRequest) -> str:
    """'served', or the refusal's text."""
    try:
        check_job(policy, job(request), "hospital-b", "leader", "leader")
    except PolicyRefusal as exc:
        return str(exc)
    return "served"


def test_an_empty_qid_list_allows_no_qid() -> None:
    policy = Policy(qids=())
    assert verdict(policy, lkc(["age"], ["patient_id"])) == (
        "party hospital-b refused: QID 'age' not among its allowed qids"
    )
    assert verdict(Policy(qids=("age",)), lkc(["age"], ["patient_id"])) == "served"


def test_a_generalized_qid_is_released() -> None:
    # An LKC job generalizes its QIDs but they still leave the hospital: a never_release
    # column may be neither a QID nor kept; only dropping it keeps it home.
    policy = Policy(never_release=("age",))
    refusal = (
        "party hospital-b refused: the job would release column 'age', which it never releases"
    )
    assert verdict(policy, lkc(["age"], ["patient_id"])) == refusal
    assert verdict(policy, lkc(["sex"], ["patient_id"])) == refusal
    assert verdict(policy, lkc(["sex"], ["patient_id", "age"])) == "served"


def test_randomized_records_that_go_through_the_union_are_released() -> None:
    policy = Policy(never_release=("diagnosis",))
    assert verdict(policy, randomize(keep_at_parties=False)) == (
        "party hospital-b refused: the job would release column 'diagnosis', which it never "
        "releases"
    )
    assert verdict(policy, randomize(keep_at_parties=True)) == "served"


def test_every_refusal_leaves_one_audit_line(caplog: pytest.LogCaptureFixture) -> None:
    policy = Policy(qids=())
    caplog.set_level(logging.INFO, logger="fedanon.party.policy")
    with pytest.raises(Aborted):
        admit(
            Context(), policy, lkc(["age"], []), "hospital-b", "leader", "leader", COLUMNS, READERS
        )
    lines = [r for r in caplog.records if r.getMessage().startswith("audit: job refused ")]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    entry = json.loads(lines[0].getMessage().removeprefix("audit: job refused "))
    assert entry == {
        "session": "ab" * 16,
        "leader": "leader",
        "kind": "lkc",
        "code": "PERMISSION_DENIED",
        "reason": "party hospital-b refused: QID 'age' not among its allowed qids",
    }
