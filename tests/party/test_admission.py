"""The handshake's admission matrix (issue #22, defect 2): every way a job can narrow, widen or
malform what it releases, per job kind, through the real servicer's ``OpenSession``.

A party ("hospital-c", last in the ring, no TLS) holds a session whose lease has lapsed, so any
admitted job would evict it. Every refused handshake must end with its status code and one line
naming the party, leave exactly one log line (the audit line carrying that reason) and change
nothing: the held session stays, and ``Status`` (session, iteration, last error, sessions
served) reads the same. An admitted job evicts the lapsed session and is served.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import grpc
import pandas as pd
import pytest

from fedanon.party.config import PartyConfig
from fedanon.party.policy import Policy
from fedanon.party.servicer import PartyServicer
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy
from tests.party.fakes import Aborted, Context, party_config

PARTY = "hospital-c"
RING = ["hospital-a", "hospital-b", PARTY]
INVALID = grpc.StatusCode.INVALID_ARGUMENT
DENIED = grpc.StatusCode.PERMISSION_DENIED
UNSERVABLE = grpc.StatusCode.FAILED_PRECONDITION  # valid job this party's data cannot serve
FLOOR = Policy(
    min_L=2,
    min_K=5,
    max_C=Fraction(1, 2),
    never_release=("patient_id",),
    never_raw=("age", "postcode"),
)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return generate_hospital(300, seed=8)


def servicer_with(table: pd.DataFrame, policy: Policy) -> PartyServicer:
    config = party_config(
        PARTY, taxonomy=hospital_taxonomy_path(), policy=policy, lease_seconds=5.0
    )
    taxonomy = load_taxonomy(hospital_taxonomy_path(), data_columns=list(table.columns))
    return PartyServicer(config, table, taxonomy, None, None, None)


def session_id(n: int) -> str:
    return f"{n:032x}"


def lkc(**change: Any) -> pb.OpenSessionRequest:
    """An LKC job at the floor: QIDs age, sex, postcode; patient_id dropped."""
    job: dict[str, Any] = {
        "L": 2,
        "K": 5,
        "C": "1/2",
        "score": "infogain",
        "qids": ["age", "sex", "postcode"],
        "sensitive": [pb.SensitiveValue(column="diagnosis", value="HIV")],
        "class_column": "readmitted",
        "class_values": ["no", "yes"],
        "drop_columns": ["patient_id"],
    }
    job.update(change)
    return pb.OpenSessionRequest(
        ref=pb.SessionRef(session_id=session_id(7)), lkc=pb.LKCJob(**job), ring=RING
    )


def randomize(table: pd.DataFrame, qids: list[str], **change: Any) -> pb.OpenSessionRequest:
    domains = [pb.QIDDomain(column=q, values=sorted(set(table[q].astype(str)))) for q in qids]
    job: dict[str, Any] = {"qids": domains, "method": "ra", "p": "uniform", **change}
    return pb.OpenSessionRequest(
        ref=pb.SessionRef(session_id=session_id(8)), randomize=pb.RandomizeJob(**job), ring=RING
    )


def drbt(id_column: str = "patient_id", matrix: str = "sparse") -> pb.OpenSessionRequest:
    return pb.OpenSessionRequest(
        ref=pb.SessionRef(session_id=session_id(9)),
        drbt=pb.DRBTJob(id_column=id_column, matrix=matrix),
        ring=RING,
    )


def changed(request: pb.OpenSessionRequest, edit: Callable[[pb.OpenSessionRequest], None]):
    copy = pb.OpenSessionRequest()
    copy.CopyFrom(request)
    edit(copy)
    return copy


def status(servicer: PartyServicer) -> pb.StatusReply:
    return servicer.Status(pb.StatusRequest(), Context())


@pytest.fixture
def holding(table: pd.DataFrame) -> Iterator[PartyServicer]:
    """The floored party holding a session whose lease lapsed (an admitted job evicts it)."""
    servicer = servicer_with(table, FLOOR)
    request = lkc()
    request.ref.session_id = session_id(1)
    servicer.OpenSession(request, Context())
    assert servicer.session is not None
    servicer.session.last_seen -= 60.0  # far past the 5 s lease
    yield servicer
    if servicer.session is not None:
        servicer.session.close()


def refused(
    servicer: PartyServicer, request: pb.OpenSessionRequest, caplog: pytest.LogCaptureFixture
) -> tuple[grpc.StatusCode, str]:
    """Send `request`; assert the refusal's one audit line and that nothing changed."""
    before, held = status(servicer), servicer.session
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="fedanon"), pytest.raises(Aborted) as aborted:
        servicer.OpenSession(request, Context())
    code, message = aborted.value.args
    assert "\n" not in message and message.startswith(f"party {PARTY} refused: "), message
    lines = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    text = lines[0].getMessage()
    assert text.startswith("audit: job refused "), text
    audit = json.loads(text.removeprefix("audit: job refused "))
    assert (audit["reason"], audit["code"]) == (message, code.name)
    assert audit["session"] == request.ref.session_id[:64]
    assert servicer.session is held
    assert status(servicer) == before
    return code, message


# (label, request builder, expected code, the reason after "party hospital-c refused: ").
REFUSED: list[tuple[str, Callable[[pd.DataFrame], pb.OpenSessionRequest], object, str]] = [
    # Malformed handshakes: refused by the same admission check as INVALID_ARGUMENT.
    (
        "no job",
        lambda t: changed(lkc(), lambda r: r.ClearField("lkc")),
        INVALID,
        "invalid job: the handshake names no job",
    ),
    ("C = -1", lambda t: lkc(C="-1"), INVALID, "invalid job: C must be in (0, 1], got -1"),
    ("C = 0", lambda t: lkc(C="0"), INVALID, "invalid job: C must be in (0, 1], got 0"),
    ("C not a number", lambda t: lkc(C="abc"), INVALID, "invalid job: C='abc' is not a number"),
    ("C = 1/0", lambda t: lkc(C="1/0"), INVALID, "invalid job: C='1/0' is not a number"),
    (
        "negative suppression",
        lambda t: lkc(suppress="-0.1"),
        INVALID,
        "invalid job: --suppress must be in [0, 1), got -0.1",
    ),
    ("L = 0", lambda t: lkc(L=0), INVALID, "invalid job: L must be at least 1 (got 0)"),
    ("K = 0", lambda t: lkc(K=0), INVALID, "invalid job: K must be at least 1 (got 0)"),
    ("no QID", lambda t: lkc(qids=[]), INVALID, "invalid job: the job names no QID"),
    (
        "QID twice",
        lambda t: lkc(qids=["age", "sex", "age"]),
        INVALID,
        "invalid job: QID column 'age' is named twice",
    ),
    (
        "unknown QID",
        lambda t: lkc(qids=["age", "blood"]),
        INVALID,
        "invalid job: QID column 'blood' is not a column of its table",
    ),
    (
        "unknown sensitive column",
        lambda t: lkc(sensitive=[pb.SensitiveValue(column="diagnosys", value="HIV")]),
        INVALID,
        "invalid job: sensitive column 'diagnosys' is not a column of its table",
    ),
    (
        "unknown class column",
        lambda t: lkc(class_column="outcome"),
        INVALID,
        "invalid job: class column 'outcome' is not a column of its table",
    ),
    (
        "unknown dropped column",
        lambda t: lkc(drop_columns=["patient_id", "ssn"]),
        INVALID,
        "invalid job: dropped column 'ssn' is not a column of its table",
    ),
    (
        "QID dropped",
        lambda t: lkc(drop_columns=["patient_id", "sex"]),
        INVALID,
        "invalid job: QID 'sex' is also dropped",
    ),
    (
        "session id not hex",
        lambda t: changed(lkc(), lambda r: setattr(r.ref, "session_id", "../" * 11)),
        INVALID,
        "invalid job: the session id is not 32 lowercase hex digits",
    ),
    (
        "ring without the party",
        lambda t: changed(lkc(), lambda r: r.ring.__delitem__(2)),
        INVALID,
        "invalid job: the ring does not include this party",
    ),
    (
        "ring repeats a party",
        lambda t: changed(lkc(), lambda r: r.ring.append("hospital-a")),
        INVALID,
        "invalid job: the ring names party 'hospital-a' twice",
    ),
    (
        "unknown sum mode",
        lambda t: changed(lkc(), lambda r: setattr(r, "sum_mode", 7)),
        INVALID,
        "invalid job: sum_mode 7 unknown",
    ),
    ("randomize: no QID", lambda t: randomize(t, []), INVALID, "invalid job: the job names no QID"),
    (
        "randomize: unknown QID",
        lambda t: changed(
            randomize(t, ["sex"]), lambda r: setattr(r.randomize.qids[0], "column", "blood")
        ),
        INVALID,
        "invalid job: QID column 'blood' is not a column of its table",
    ),
    (
        "randomize: QID twice",
        lambda t: randomize(t, ["sex", "sex"]),
        INVALID,
        "invalid job: a QID column is listed twice",
    ),
    (
        "drbt: unknown id column",
        lambda t: drbt(id_column="mrn"),
        INVALID,
        "invalid job: id column 'mrn' is not a column of its table",
    ),
    (
        "drbt: unknown matrix",
        lambda t: drbt(matrix="dense"),
        INVALID,
        "invalid job: matrix 'dense' unknown (expected one of gaussian, sparse)",
    ),
    # Valid jobs below the floor or releasing what the party keeps: PERMISSION_DENIED.
    ("L below the floor", lambda t: lkc(L=1), DENIED, "L=1 below its floor min_L=2"),
    ("K below the floor", lambda t: lkc(K=4), DENIED, "K=4 below its floor min_K=5"),
    ("C above the ceiling", lambda t: lkc(C="0.6"), DENIED, "C=3/5 above its ceiling max_C=1/2"),
    (
        "narrowed to sex: age leaves raw",
        lambda t: lkc(qids=["sex"]),
        DENIED,
        "the job would release column 'age' raw, which it never releases raw",
    ),
    (
        "narrowed without postcode",
        lambda t: lkc(qids=["age", "sex"]),
        DENIED,
        "the job would release column 'postcode' raw, which it never releases raw",
    ),
    (
        "never_release column kept",
        lambda t: lkc(drop_columns=[]),
        DENIED,
        "the job would release column 'patient_id', which it never releases",
    ),
    (
        "randomize: non-QIDs leave raw",
        lambda t: randomize(t, ["sex"]),
        DENIED,
        "the job would release column 'patient_id', which it never releases",
    ),
    (
        "drbt: every column leaves",
        lambda t: drbt(),
        DENIED,
        "the job would release column 'patient_id', which it never releases",
    ),
]


@pytest.mark.parametrize(
    ("build", "code", "reason"),
    [pytest.param(build, code, reason, id=label) for label, build, code, reason in REFUSED],
)
def test_refused_handshake_is_audited_and_changes_nothing(
    holding: PartyServicer,
    table: pd.DataFrame,
    caplog: pytest.LogCaptureFixture,
    build: Callable[[pd.DataFrame], pb.OpenSessionRequest],
    code: grpc.StatusCode,
    reason: str,
) -> None:
    assert refused(holding, build(table), caplog) == (code, f"party {PARTY} refused: {reason}")


def test_widened_job_is_served_and_evicts_the_lapsed_session(
    holding: PartyServicer, table: pd.DataFrame, caplog: pytest.LogCaptureFixture
) -> None:
    """More QIDs (fewer raw columns) stays within the policy: served, audited with what leaves
    raw; only now is the lapsed session evicted."""
    before = status(holding)
    request = lkc(qids=["age", "sex", "postcode", "employment"])
    with caplog.at_level(logging.INFO, logger="fedanon"):
        holding.OpenSession(request, Context())
    after = status(holding)
    assert after.session_id == request.ref.session_id
    assert after.sessions_served == before.sessions_served + 1
    assert "evicted" in after.last_error
    served = [r.getMessage() for r in caplog.records if "audit: job served" in r.getMessage()]
    audit = json.loads(served[-1].split("audit: job served ", 1)[1])
    assert "employment" not in audit["raw"] and "diagnosis" in audit["raw"]
    assert not {"age", "postcode", "patient_id"} & set(audit["raw"])


def test_strict_mode_admits_only_named_raw_columns(
    table: pd.DataFrame, caplog: pytest.LogCaptureFixture
) -> None:
    """``release_raw``: every column that leaves raw must be named; QIDs need not be."""
    raw = ["country_of_birth", "marital_status", "employment", "admission_type"]
    strict = Policy(
        never_release=("patient_id",),
        release_raw=(*raw, "length_of_stay", "diagnosis", "readmitted"),
    )
    servicer = servicer_with(table, strict)
    servicer.OpenSession(lkc(), Context())  # age, sex, postcode generalized; the rest named
    assert servicer.session is not None
    servicer.session.last_seen -= 60.0
    narrower = Policy(never_release=("patient_id",), release_raw=tuple(raw))
    servicer.config = PartyConfig(**{**servicer.config.__dict__, "policy": narrower})
    assert refused(servicer, lkc(), caplog) == (
        DENIED,
        f"party {PARTY} refused: the job would release column 'length_of_stay' raw, which is "
        "not among its release_raw",
    )
    servicer.session.close()


def test_randomized_table_kept_at_the_parties_releases_nothing(table: pd.DataFrame) -> None:
    """Kept at the parties, a randomization job releases no column (only the histograms' sum):
    never_release and never_raw do not refuse it."""
    servicer = servicer_with(table, FLOOR)
    servicer.OpenSession(randomize(table, ["sex"], keep_at_parties=True), Context())
    assert servicer.session is not None
    servicer.session.close()


def test_job_the_data_cannot_serve_is_refused_like_an_invalid_one(
    table: pd.DataFrame, caplog: pytest.LogCaptureFixture
) -> None:
    """A valid DRBT job over a table with text columns fails in the kind's handler: the same
    audited refusal, nothing changed (not even the last error)."""
    servicer = servicer_with(table, Policy())
    servicer.OpenSession(lkc(), Context())
    assert servicer.session is not None
    servicer.session.last_seen -= 60.0
    code, message = refused(servicer, drbt(), caplog)
    assert code == UNSERVABLE and "is not a number" in message
    servicer.session.close()
