"""The party's privacy floor rule by rule (party/policy.py): each rule refuses exactly the jobs
on the wrong side of its bound, with one line naming the party and the rule, and accepts the
bound itself; DRBT jobs meet only the kind, leader and column rules."""

from __future__ import annotations

from fractions import Fraction

import pytest

from fedanon.configschema import ConfigError, validate
from fedanon.party.handlers import HANDLERS
from fedanon.party.policy import (
    POLICY_SCHEMA,
    JobRequest,
    Policy,
    PolicyRefusal,
    check_job,
    read_request,
)
from fedanon.party.servicer import PartyServicer
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.synth import generate_hospital
from tests.party.fakes import Aborted, Context, party_config

COLUMNS = ["patient_id", "age", "sex", "postcode", "diagnosis"]
READERS = {kind: handler.admission for kind, handler in HANDLERS.items()}


def lkc(
    L: int = 3,
    K: int = 10,
    C: str = "1/2",
    qids: tuple[str, ...] = ("age", "sex"),
    drop: tuple[str, ...] = ("patient_id",),
) -> JobRequest:
    request = pb.OpenSessionRequest(
        ref=pb.SessionRef(session_id="ab" * 16),
        lkc=pb.LKCJob(L=L, K=K, C=C, score="infogain", qids=list(qids), drop_columns=list(drop)),
        ring=["a", "b", "c"],
    )
    job = read_request(request, COLUMNS, READERS)
    assert job is not None
    return job


def drbt(id_column: str = "patient_id") -> JobRequest:
    request = pb.OpenSessionRequest(
        ref=pb.SessionRef(session_id="cd" * 16),
        drbt=pb.DRBTJob(id_column=id_column, matrix="sparse"),
        ring=["a", "b"],
    )
    job = read_request(request, COLUMNS, READERS)
    assert job is not None
    return job


FLOOR = Policy(
    min_L=2,
    min_K=5,
    max_C=Fraction(1, 2),
    qids=("age", "sex", "postcode"),
    never_release=("patient_id",),
    job_kinds=("lkc",),
    leader="leader",
)


def refusal(policy: Policy, job: JobRequest, caller: str | None = "leader") -> str:
    with pytest.raises(PolicyRefusal) as refused:
        check_job(policy, job, "hospital-b", "leader", caller)
    return str(refused.value)


def test_floor_itself_is_accepted() -> None:
    check_job(FLOOR, lkc(L=2, K=5, C="1/2"), "hospital-b", "leader", "leader")


@pytest.mark.parametrize(
    ("job", "reason"),
    [
        (lambda: lkc(L=1), "L=1 below its floor min_L=2"),
        (lambda: lkc(K=4), "K=4 below its floor min_K=5"),
        (lambda: lkc(C="0.51"), "C=51/100 above its ceiling max_C=1/2"),
        (lambda: lkc(qids=("age", "diagnosis")), "QID 'diagnosis' not among its allowed qids"),
        (
            lambda: lkc(drop=()),
            "the job would release column 'patient_id', which it never releases",
        ),
        (lambda: drbt(), "job kind 'drbt' not among its job_kinds ['lkc']"),
    ],
)
def test_each_rule_refuses_with_its_reason(job, reason: str) -> None:
    assert refusal(FLOOR, job()) == f"party hospital-b refused: {reason}"


def test_leader_rule_checks_the_callers_certificate_name() -> None:
    assert (
        refusal(FLOOR, lkc(L=2, K=5), caller="hospital-a")
        == "party hospital-b refused: leader 'hospital-a' is not its leader 'leader'"
    )
    check_job(FLOOR, lkc(L=2, K=5), "hospital-b", "leader", None)  # --insecure: no identity


def test_drbt_meets_only_kind_leader_and_columns() -> None:
    policy = Policy(min_L=9, min_K=99, max_C=Fraction(1, 100), qids=(), job_kinds=("drbt",))
    check_job(policy, drbt(), "hospital-b", "leader", "leader")  # no L, K, C, QIDs in DRBT
    guarded = Policy(never_release=("diagnosis",), job_kinds=("drbt",))
    assert "column 'diagnosis'" in refusal(guarded, drbt())


def test_open_policy_serves_everything() -> None:
    open_policy = Policy(configured=False)
    for job in (lkc(L=1, K=1, C="1", drop=()), drbt()):
        check_job(open_policy, job, "hospital-b", "leader", "leader")


def test_first_broken_rule_is_the_one_named() -> None:
    """L, K and C all below the floor: the message names one rule, on one line."""
    message = refusal(FLOOR, lkc(L=1, K=1, C="1"))
    assert message == "party hospital-b refused: L=1 below its floor min_L=2"


def test_malformed_c_from_the_wire_is_refused() -> None:
    with pytest.raises(PolicyRefusal, match="C='abc' is not a number"):
        lkc(C="abc")


def test_canonical_spec_is_sorted_compact_json_and_order_free() -> None:
    job = lkc(L=2, K=5, C="1/2")
    assert job.canonical().startswith('{"C":"1/2","K":5,"L":2,"class":null,')
    assert " " not in job.canonical()
    assert job.sha256() == lkc(L=2, K=5, C="1/2").sha256()
    assert job.sha256() != lkc(L=2, K=6, C="1/2").sha256()


def test_refusal_is_the_same_whatever_the_data() -> None:
    """The leakage claim for policy refusals: a party's answer to a below-floor job depends on
    the request, its policy and its column names only; two tables with other records give the
    same refusal, and neither party's state changes."""
    config = party_config(policy=FLOOR)
    request = pb.OpenSessionRequest(
        ref=pb.SessionRef(session_id="ef" * 16),
        lkc=pb.LKCJob(
            L=2, K=1, C="1/2", score="infogain", qids=["age"], drop_columns=["patient_id"]
        ),
        ring=["hospital-a", "hospital-b", "hospital-c"],
    )
    answers = []
    for seed, rows in ((1, 50), (2, 400)):
        servicer = PartyServicer(config, generate_hospital(rows, seed=seed), None, None, None, None)
        with pytest.raises(Aborted) as refused:
            servicer.OpenSession(request, Context())
        answers.append(refused.value.args)
        assert servicer.session is None and servicer.last_error == ""
        assert servicer.sessions_served == 0
    assert answers[0] == answers[1]
    assert answers[0][1] == "party hospital-b refused: K=1 below its floor min_K=5"


def randomize(qids: tuple[str, ...] = ("sex",), keep: bool = False) -> JobRequest:
    request = pb.OpenSessionRequest(
        ref=pb.SessionRef(session_id="ef" * 16),
        randomize=pb.RandomizeJob(
            qids=[pb.QIDDomain(column=q, values=["x", "y"]) for q in qids],
            method="ra",
            p="uniform",
            keep_at_parties=keep,
        ),
        ring=["a", "b", "c"],
    )
    return read_request(request, COLUMNS, READERS)


def test_empty_qids_allow_no_qid_at_all() -> None:
    """``qids = []`` is the strictest list (no column may be a QID), not "any QID"."""
    none_allowed = Policy(qids=())
    assert refusal(none_allowed, lkc()) == (
        "party hospital-b refused: QID 'age' not among its allowed qids"
    )
    assert "QID 'sex' not among its allowed qids" in refusal(none_allowed, randomize())
    check_job(none_allowed, drbt(), "hospital-b", "leader", "leader")  # DRBT names no QID


@pytest.mark.parametrize(
    ("job", "released", "raw"),
    [
        # LKC: every column it does not drop; only the QIDs are generalized.
        (lambda: lkc(), COLUMNS[1:], ["postcode", "diagnosis"]),
        (lambda: lkc(qids=("sex",)), COLUMNS[1:], ["age", "postcode", "diagnosis"]),
        # DRBT: every column; the ids raw, the attributes projected.
        (lambda: drbt(), COLUMNS, ["patient_id"]),
        # Randomization: every column through the union; the non-QIDs untouched.
        (lambda: randomize(), COLUMNS, ["patient_id", "age", "postcode", "diagnosis"]),
        (lambda: randomize(keep=True), [], []),
    ],
    ids=["lkc", "lkc-narrowed", "drbt", "randomize", "randomize-kept"],
)
def test_what_each_kind_releases_and_releases_raw(job, released: list[str], raw: list[str]):
    request = job()
    assert list(request.released) == released and list(request.raw) == raw


@pytest.mark.parametrize(
    ("job", "column"),
    [
        (lambda: lkc(qids=("sex",)), "age"),  # narrowing the QIDs sidesteps no floor
        (lambda: randomize(), "age"),  # randomization leaves non-QIDs as they are
        (lambda: drbt(id_column="age"), "age"),  # DRBT's id column goes to the leader raw
    ],
    ids=["lkc", "randomize", "drbt"],
)
def test_never_raw_refuses_every_kind_that_releases_the_column_raw(job, column: str) -> None:
    policy = Policy(never_raw=("age",))
    assert refusal(policy, job()) == (
        f"party hospital-b refused: the job would release column '{column}' raw, which it "
        "never releases raw"
    )
    check_job(policy, lkc(qids=("age", "sex")), "hospital-b", "leader", "leader")
    check_job(policy, randomize(qids=("age",)), "hospital-b", "leader", "leader")
    check_job(policy, randomize(keep=True), "hospital-b", "leader", "leader")  # nothing leaves


def test_strict_release_raw_names_every_raw_column() -> None:
    strict = Policy(release_raw=("patient_id", "postcode", "diagnosis"))
    check_job(strict, lkc(drop=()), "hospital-b", "leader", "leader")
    check_job(strict, drbt(), "hospital-b", "leader", "leader")
    assert refusal(strict, lkc(qids=("sex",))) == (
        "party hospital-b refused: the job would release column 'age' raw, which is not "
        "among its release_raw"
    )
    assert "column 'age' raw" in refusal(strict, randomize())
    assert "column 'sex' raw" in refusal(Policy(release_raw=()), lkc(qids=("age",)))


def test_policy_raw_keys_load_and_must_not_overlap() -> None:
    table = validate({"never_raw": ["age"], "release_raw": ["diagnosis"]}, POLICY_SCHEMA, "p")
    policy = Policy.from_table(table)
    assert (policy.never_raw, policy.release_raw) == (("age",), ("diagnosis",))
    assert Policy.from_table(validate({}, POLICY_SCHEMA, "p")).release_raw is None
    assert "release_raw=any" in Policy.from_table(validate({}, POLICY_SCHEMA, "p")).describe()
    with pytest.raises(ConfigError, match="release_raw: column 'age' is also in never_raw"):
        validate({"never_raw": ["age"], "release_raw": ["age"]}, POLICY_SCHEMA, "p")


def test_allow_exclusion_is_off_unless_the_policy_turns_it_on() -> None:
    """``allow_exclusion`` (#28): false when absent (and with no [policy] at all), true only
    when given, anything but a boolean refused naming the key; the start-up line states it."""
    assert not Policy.from_table(None).allow_exclusion
    assert not Policy.from_table(validate({}, POLICY_SCHEMA, "p")).allow_exclusion
    allowed = Policy.from_table(validate({"allow_exclusion": True}, POLICY_SCHEMA, "p"))
    assert allowed.allow_exclusion
    assert "allow_exclusion=true" in allowed.describe()
    with pytest.raises(ConfigError, match="allow_exclusion"):
        validate({"allow_exclusion": "yes"}, POLICY_SCHEMA, "p")
