"""A hospital's own privacy floor, with real daemons (issue #10, "A hospital's own privacy
floor"): a job below a party's ``[policy]`` is refused at the handshake with a one-line reason
naming the party and the rule, the leader reports it, no party keeps a session and the refusing
party changes no state; a served job is written to the party's log with its full parameters
and the SHA-256 of its canonical JSON."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.federation.transport import make_channel
from fedanon.leader.federation import PartyFailure
from fedanon.leader.sim import Federation, federation, split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from tests.distributed.conftest import (
    Dataset,
    hospital_dataset,
    run_distributed,
    status,
    wait_leases_lapsed,
)

LEASE = 2.0  # the floored federation's session lease, seconds
FLOOR = (
    '\n[policy]\nmin_L = 2\nmin_K = 5\nmax_C = 0.5\nnever_release = ["patient_id"]\n'
    'never_raw = ["age", "postcode"]\n'
)
GUARDED = 1  # hospital-2, in the middle of the ring


@pytest.fixture(scope="module")
def data() -> Dataset:
    return hospital_dataset(900, seed=11)


@pytest.fixture(scope="module")
def floored(data: Dataset) -> Iterator[Federation]:
    """Three daemons; hospital-2 restarted with a [policy] floor appended to its party.toml."""
    parts = split_table(data.table, 3, "random", seed=2)
    with federation(parts, data.taxonomy_path, secure=True, lease_seconds=LEASE) as fed:
        daemon = fed.daemons[GUARDED]
        fed.stop(daemon)
        with daemon.config.open("a", encoding="utf-8") as config:
            config.write(FLOOR)
        fed.start(daemon)
        fed.wait_ready(daemon)
        yield fed


def _log(fed: Federation, index: int) -> str:
    return fed.daemons[index].log.read_text(encoding="utf-8", errors="replace")


def _audit_lines(fed: Federation, index: int, kind: str) -> list[dict]:
    marker = f"audit: job {kind} "
    return [
        json.loads(line.split(marker, 1)[1])
        for line in _log(fed, index).splitlines()
        if marker in line
    ]


@pytest.mark.parametrize(
    ("L", "K", "C", "reason"),
    [
        (1, 1, "1", "party hospital-2 refused: L=1 below its floor min_L=2"),
        (2, 1, "0.5", "party hospital-2 refused: K=1 below its floor min_K=5"),
        (2, 5, "0.6", "party hospital-2 refused: C=3/5 above its ceiling max_C=1/2"),
    ],
)
def test_job_below_the_floor_is_refused_at_the_handshake(
    floored: Federation, data: Dataset, tmp_path: Path, L: int, K: int, C: str, reason: str
) -> None:
    before = status(floored, GUARDED)
    out = tmp_path / "release.csv"
    with pytest.raises(PartyFailure) as refused:
        run_distributed(
            floored.hops, floored.leader_tls, data, data.spec(L, K, C), out, rpc_seconds=30.0
        )
    assert str(refused.value) == f"handshake: {reason}"
    assert "\n" not in str(refused.value) and not out.exists()
    for index in range(3):
        assert status(floored, index).session_id == "", f"party {index + 1} kept a session"
    after = status(floored, GUARDED)
    assert (after.last_error, after.sessions_served) == (before.last_error, before.sessions_served)
    refusals = _audit_lines(floored, GUARDED, "refused")
    assert refusals and refusals[-1]["reason"] == reason and refusals[-1]["leader"] == "leader"


def test_job_releasing_a_never_release_column_is_refused(
    floored: Federation, data: Dataset, tmp_path: Path
) -> None:
    spec = data.spec(2, 5, "0.5", drop=[])  # patient_id would be released
    with pytest.raises(
        PartyFailure,
        match="party hospital-2 refused: the job would release "
        "column 'patient_id', which it never releases",
    ):
        run_distributed(floored.hops, floored.leader_tls, data, spec, tmp_path / "r.csv")


@pytest.mark.parametrize(
    ("qids", "column"), [(["sex"], "age"), (["age", "sex", "employment"], "postcode")]
)
def test_narrowed_job_releasing_a_never_raw_column_raw_is_refused(
    floored: Federation, data: Dataset, tmp_path: Path, qids: list[str], column: str
) -> None:
    """Issue #22 defect 2: L and K above the floor, but so few QIDs that a column the hospital
    never releases raw would leave ungeneralized; refused at the handshake, audited, no state."""
    before = status(floored, GUARDED)
    reason = (
        f"party hospital-2 refused: the job would release column '{column}' raw, which it "
        "never releases raw"
    )
    out = tmp_path / "release.csv"
    with pytest.raises(PartyFailure) as refused:
        run_distributed(
            floored.hops, floored.leader_tls, data, data.spec(3, 10, "0.5", qids=qids), out
        )
    assert str(refused.value) == f"handshake: {reason}" and not out.exists()
    after = status(floored, GUARDED)
    assert (after.session_id, after.last_error, after.sessions_served) == (
        "",
        before.last_error,
        before.sessions_served,
    )
    refusal = _audit_lines(floored, GUARDED, "refused")[-1]
    assert (refusal["reason"], refusal["code"], refusal["kind"]) == (
        reason,
        "PERMISSION_DENIED",
        "lkc",
    )


def _open(fed: Federation, index: int, spec_proto: pb.LKCJob) -> tuple[str, grpc.RpcError | None]:
    session_id = secrets.token_hex(16)
    daemon = fed.daemons[index]
    channel = make_channel(daemon.address, daemon.name, fed.leader_tls)
    try:
        pb_grpc.PartyStub(channel).OpenSession(
            pb.OpenSessionRequest(
                ref=pb.SessionRef(session_id=session_id),
                lkc=spec_proto,
                ring=[d.name for d in fed.daemons],
                sum_mode=pb.SUM_MODE_RING,
            ),
            timeout=30,
        )
        return session_id, None
    except grpc.RpcError as exc:
        return session_id, exc
    finally:
        channel.close()


def _end(fed: Federation, index: int, session_id: str) -> None:
    daemon = fed.daemons[index]
    channel = make_channel(daemon.address, daemon.name, fed.leader_tls)
    try:
        pb_grpc.PartyStub(channel).End(
            pb.EndRequest(ref=pb.SessionRef(session_id=session_id), abort=True, reason="test"),
            timeout=10,
        )
    finally:
        channel.close()


def test_refusal_changes_no_state_even_over_an_idle_session(
    floored: Federation, data: Dataset
) -> None:
    """A refused job must not evict (or otherwise touch) a session the party holds, even one
    whose lease lapsed (an admitted job would evict that one)."""
    held, error = _open(floored, GUARDED, lkc_job_to_proto(data.spec(2, 5, "0.5")))
    assert error is None, error
    try:
        before = status(floored, GUARDED)
        # Past the lease (the party says so): an admitted job would evict the session.
        assert not wait_leases_lapsed(floored, [GUARDED])
        _, error = _open(floored, GUARDED, lkc_job_to_proto(data.spec(1, 1, "1")))
        assert error is not None and error.code() == grpc.StatusCode.PERMISSION_DENIED
        assert error.details() == "party hospital-2 refused: L=1 below its floor min_L=2"
        after = status(floored, GUARDED)
        assert after.session_id == held
        assert (after.last_error, after.sessions_served) == (
            before.last_error,
            before.sessions_served,
        )
    finally:
        _end(floored, GUARDED, held)


def test_served_job_is_audited_with_parameters_and_hash(
    floored: Federation, data: Dataset, tmp_path: Path
) -> None:
    spec = data.spec(2, 5, "0.5")
    report = run_distributed(floored.hops, floored.leader_tls, data, spec, tmp_path / "release.csv")
    served = [
        next(e for e in _audit_lines(floored, i, "served") if e["session"] == report["session_id"])
        for i in range(3)
    ]
    entry = served[GUARDED]
    assert entry["kind"] == "lkc" and entry["leader"] == "leader"
    parameters = entry["parameters"]
    assert (parameters["L"], parameters["K"], parameters["C"]) == (2, 5, "1/2")
    assert parameters["qids"] == list(spec.qids)
    assert parameters["sensitive"] == [f"{s.column}={s.value}" for s in spec.sensitive]
    assert parameters["drop"] == ["patient_id"] and parameters["class"] == spec.class_column
    assert parameters["ring"] == ["hospital-1", "hospital-2", "hospital-3"]
    assert "patient_id" not in entry["released"] and "diagnosis" in entry["released"]
    canonical = json.dumps(
        {"kind": "lkc", **parameters}, sort_keys=True, separators=(",", ":"), ensure_ascii=True
    )
    assert entry["sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert {e["sha256"] for e in served} == {entry["sha256"]}  # the same job everywhere


def test_party_without_policy_logs_that_no_floor_is_set(floored: Federation) -> None:
    assert "no privacy floor is set" in _log(floored, 0)
    assert "no privacy floor is set" not in _log(floored, GUARDED).split("stopped")[-1]
    assert "privacy floor: min_L=2 min_K=5 max_C=1/2" in _log(floored, GUARDED)


def test_sensitive_column_missing_at_a_party_is_named(
    floored: Federation, data: Dataset, tmp_path: Path
) -> None:
    spec = data.spec(2, 5, "0.5", sensitive={"diagnosys": ["HIV"]})
    with pytest.raises(
        PartyFailure,
        match="party hospital-1 refused: invalid job: sensitive column 'diagnosys' is not a "
        "column of its table",
    ):
        run_distributed(floored.hops, floored.leader_tls, data, spec, tmp_path / "r.csv")
