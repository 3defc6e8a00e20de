"""Faults and refusals (docs/distributed.md, 'Faults' and 'Sessions and leases').

A party that dies or hangs aborts the session everywhere within the deadline, the leader names
the party and the phase, nothing is written, and a new session can start right away; messages
of another session or a stale iteration are refused; a party with another taxonomy is refused
at the handshake with the differing item named; only certificates of the federation's CA, in
the right role, get in.
"""

from __future__ import annotations

import secrets
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

import fedanon.leader.kinds.lkc
import fedanon.leader.union
from fedanon.algorithms.tds.engine import StepInfo
from fedanon.crypto.identity import create_ca, issue_identity, save_ca, save_identity
from fedanon.errors import FedanonError
from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_channel
from fedanon.leader.federation import PartyFailure
from fedanon.leader.sim import Federation, split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from tests.distributed.conftest import (
    LEASE_SECONDS,
    Dataset,
    assert_same_release,
    centralized,
    kill_when,
    make_job,
    run_distributed,
    status,
)
from tests.distributed.recording import recording_federation

RPC_SECONDS = 10.0


def party_stub(
    fed: Federation,
    index: int,
    tls: TLSFiles | None = None,
) -> tuple[pb_grpc.PartyStub, grpc.Channel]:
    daemon = fed.daemons[index]
    channel = make_channel(daemon.address, daemon.name, tls or fed.leader_tls)
    return pb_grpc.PartyStub(channel), channel


def ensure_running(fed: Federation) -> None:
    """Restart any daemon a test killed, so the shared federation is whole again."""
    for daemon in fed.daemons:
        if daemon.process is None or daemon.process.poll() is not None:
            fed.start(daemon)
            fed.wait_ready(daemon)


def leader_deadline(parties: int, rpc_seconds: float = RPC_SECONDS) -> float:
    """The longest a secure-sum round may take before the leader gives up (leader/federation)."""
    return rpc_seconds * (1 + 0.25 * parties)


# ---------------------------------------------------------------------------- a party dies
# A killed party in the quick subset: test_faults_phases.py [kill-last-fetch].
@pytest.mark.slow
def test_killed_party_aborts_everywhere_and_rerun_succeeds(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """SIGKILL party 2 after iteration 2: named failure, no output, survivors idle and ready
    for a new session at once, and a rerun after restarting the party equals centralized."""
    fed = hospital_federation
    spec = hospital_data.spec(L=3, K=20, C="0.2")
    out, report = tmp_path / "release.csv", tmp_path / "report.json"
    kill = kill_when(fed, victim=1, iteration=2)
    killed_at: list[float] = []

    def on_step(step: StepInfo) -> None:
        kill(step)
        if kill.fired and not killed_at:
            killed_at.append(time.monotonic())

    try:
        with pytest.raises(PartyFailure) as failure:
            run_distributed(
                fed.hops,
                fed.leader_tls,
                hospital_data,
                spec,
                out,
                on_step=on_step,
                report=report,
                rpc_seconds=RPC_SECONDS,
            )
        elapsed = time.monotonic() - killed_at[0]
        message = str(failure.value)
        assert "hospital-2" in message
        assert "secure sum, iteration 3" in message, message
        assert failure.value.exit_code != 0
        assert elapsed < leader_deadline(3), f"failure took {elapsed:.1f} s"
        assert not out.exists() and not report.exists()
        assert not list(tmp_path.iterdir()), "a temporary output file was left behind"
        for index in (0, 2):
            survivor = status(fed, index)
            assert survivor.session_id == "", f"{survivor.party} still holds the session"
            assert "abort" in survivor.last_error

        # A new session starts at once: with party 2 still dead it fails at the handshake on
        # party 2 (unreachable) - not on a survivor that still considers itself busy.
        with pytest.raises(PartyFailure) as again:
            run_distributed(
                fed.hops, fed.leader_tls, hospital_data, spec, out, rpc_seconds=RPC_SECONDS
            )
        assert "handshake" in str(again.value) and "hospital-2" in str(again.value)
        assert "busy" not in str(again.value)

        fed.start(fed.daemons[1])
        fed.wait_ready(fed.daemons[1])
        rerun = run_distributed(
            fed.hops, fed.leader_tls, hospital_data, spec, out, rpc_seconds=RPC_SECONDS
        )
        assert_same_release(out, rerun, centralized(hospital_data, spec))
    finally:
        ensure_running(fed)


@pytest.mark.slow
def test_party_killed_during_union_is_named(
    hospital_federation: Federation,
    hospital_data: Dataset,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last party dies after the specialization loop: the union phase fails, named."""
    fed = hospital_federation
    original = fedanon.leader.union.run_union

    def kill_then_unite(*args: Any, **kwargs: Any) -> Any:
        fed.stop(fed.daemons[2], signal.SIGKILL)
        return original(*args, **kwargs)

    monkeypatch.setattr("fedanon.leader.kinds.lkc.run_union", kill_then_unite)
    out = tmp_path / "release.csv"
    try:
        with pytest.raises(PartyFailure) as failure:
            run_distributed(
                fed.hops,
                fed.leader_tls,
                hospital_data,
                hospital_data.spec(L=2, K=25, C="0.2"),
                out,
                rpc_seconds=RPC_SECONDS,
            )
        assert "union" in str(failure.value) and "hospital-3" in str(failure.value)
        assert not out.exists()
        for index in (0, 1):
            assert status(fed, index).session_id == ""
    finally:
        ensure_running(fed)


# A party too slow for its deadline in the quick subset: test_faults_phases.py
# [trickle-middle-collect] (the same abort path, the same next session).
@pytest.mark.slow
def test_hung_party_times_out_and_next_session_starts_at_once(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """SIGSTOP party 2 mid-loop: the deadline names it and the session is aborted; once the
    party resumes, a new session runs immediately (the spec's 'a new session can start
    immediately' - the hung party missed the leader's abort while it was stopped, and it was
    stopped longer than its session lease, which nobody renewed since)."""
    fed = hospital_federation
    rpc = 3.0
    spec = hospital_data.spec(L=3, K=20, C="0.2")
    stopped = kill_when(fed, victim=1, iteration=2, sig=signal.SIGSTOP)
    stopped_at: list[float] = []

    def on_step(step: StepInfo) -> None:
        stopped(step)
        if stopped.fired and not stopped_at:
            stopped_at.append(time.monotonic())

    out = tmp_path / "release.csv"
    process = fed.daemons[1].process
    assert process is not None
    try:
        try:
            with pytest.raises(PartyFailure) as failure:
                run_distributed(
                    fed.hops,
                    fed.leader_tls,
                    hospital_data,
                    spec,
                    out,
                    on_step=on_step,
                    rpc_seconds=rpc,
                )
            # Measured from the stop, not from the start: a loaded machine may take long over
            # the handshake and the first iterations, which says nothing about the deadline.
            elapsed = time.monotonic() - stopped_at[0]
            # A heartbeat the leader sent just before it gave up is still within its deadline
            # and would renew the dead session's lease when the party resumes: let it expire.
            time.sleep(LEASE_SECONDS / 4 + 0.5)
        finally:
            process.send_signal(signal.SIGCONT)
        assert "hospital-2" in str(failure.value) and "iteration 3" in str(failure.value)
        # The round's deadline plus the best-effort abort (3 s per unreachable party).
        assert elapsed < leader_deadline(3, rpc) + 3 + 2, f"took {elapsed:.1f} s"
        assert not out.exists()
        report = run_distributed(
            fed.hops, fed.leader_tls, hospital_data, spec, out, rpc_seconds=RPC_SECONDS
        )
        assert_same_release(out, report, centralized(hospital_data, spec))
        assert "lease lapsed" in status(fed, 1).last_error
    finally:
        if status(fed, 1).session_id:  # the stale session would block the shared federation
            fed.stop(fed.daemons[1], signal.SIGKILL)
        ensure_running(fed)


# ------------------------------------------------------------------ stale and foreign messages
def test_stale_session_and_iteration_are_rejected(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """Mid-session, with the leader's own certificate: a Sum of another session, a replayed
    iteration 0, a future iteration and a union hop of a stale round are all refused with
    FAILED_PRECONDITION; the session is not disturbed and ends equal to centralized."""
    fed = hospital_federation
    stub, channel = party_stub(fed, 0)
    refusals: list[tuple[str, grpc.StatusCode, str]] = []

    def attempt(label: str, call: Callable[[], Any]) -> None:
        try:
            call()
        except grpc.RpcError as exc:
            refusals.append((label, exc.code(), exc.details() or ""))
        else:
            refusals.append((label, grpc.StatusCode.OK, "accepted"))

    def on_step(step: StepInfo) -> None:
        if step.iteration != 2:
            return
        sid = status(fed, 0).session_id
        assert sid, "party 1 reports no session mid-run"
        attempt(
            "other session",
            lambda: stub.Sum(
                pb.SumRequest(ref=pb.SessionRef(session_id=secrets.token_hex(16), iteration=3)),
                timeout=5,
            ),
        )
        attempt(
            "replayed iteration",
            lambda: stub.Sum(
                pb.SumRequest(ref=pb.SessionRef(session_id=sid, iteration=0)), timeout=5
            ),
        )
        attempt(
            "future iteration",
            lambda: stub.Sum(
                pb.SumRequest(ref=pb.SessionRef(session_id=sid, iteration=99)), timeout=5
            ),
        )
        attempt(
            "stale union",
            lambda: stub.Union(
                pb.UnionRequest(
                    ref=pb.SessionRef(session_id=sid, iteration=1), phase=pb.UNION_PHASE_MEASURE
                ),
                timeout=5,
            ),
        )

    spec = hospital_data.spec(L=3, K=20, C="0.2")
    out = tmp_path / "release.csv"
    try:
        report = run_distributed(
            fed.hops, fed.leader_tls, hospital_data, spec, out, on_step=on_step
        )
        assert_same_release(out, report, centralized(hospital_data, spec))
        assert [r[0] for r in refusals] == [
            "other session",
            "replayed iteration",
            "future iteration",
            "stale union",
        ]
        for label, code, details in refusals:
            assert code == grpc.StatusCode.FAILED_PRECONDITION, (label, code, details)
            assert details.startswith("party hospital-1:"), details
        assert "session" in refusals[0][2]
        for label, _, details in refusals[1:]:
            assert "stale" in details or "out-of-order" in details, (label, details)
        # After End, the old session id is refused too.
        with pytest.raises(grpc.RpcError) as late:
            stub.Sum(
                pb.SumRequest(
                    ref=pb.SessionRef(
                        session_id=report["session_id"], iteration=report["iterations"]
                    )
                ),
                timeout=5,
            )
        assert late.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "session" in (late.value.details() or "")
    finally:
        channel.close()


# ----------------------------------------------------------------------- handshake refusals
def test_different_taxonomy_refused_naming_the_item(
    hospital_data: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Party 2 renamed the postcode district A1* to A1-district: refused at the handshake,
    the party and the differing item named, nothing written, every party idle afterwards."""
    original = hospital_data.taxonomy_path.read_text(encoding="utf-8")
    assert "\n    A1*\n" in original
    changed = tmp_path / "hospital-renamed.toml"
    changed.write_text(original.replace("\n    A1*\n", "\n    A1-district\n"), encoding="utf-8")
    table = hospital_data.table.iloc[:600].reset_index(drop=True)
    parts = split_table(table, 3, "random", seed=5)
    out = tmp_path / "release.csv"
    with recording_federation(
        parts, hospital_data.taxonomy_path, tmp_path / "fed", monkeypatch, taxonomy_of={1: changed}
    ) as fed:
        job = make_job(
            fed.hops, fed.leader_tls, hospital_data, hospital_data.spec(L=2, K=10, C="0.5"), out
        )
        with pytest.raises(FedanonError) as refused:
            fedanon.leader.kinds.lkc.run_lkc(job)
        message = str(refused.value)
        assert message.startswith("handshake: party hospital-2"), message
        assert "A1*" in message or "A1-district" in message, message
        assert not out.exists()
        for hop in fed.hops:
            channel = make_channel(hop.address, hop.name, fed.leader_tls)
            try:
                reply = pb_grpc.PartyStub(channel).Status(pb.StatusRequest(), timeout=5)
            finally:
                channel.close()
            assert reply.session_id == "", f"{hop.name} kept the refused session"
        # No Sum or Union ever reached a party.
        assert not fed.log.of(method="Sum") and not fed.log.of(method="Union")


def test_ring_order_must_match_the_parties_configuration(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """A leader announcing another ring order than the daemons forward to is refused at the
    handshake, naming the party whose next hop disagrees; the others drop the session."""
    fed = hospital_federation
    out = tmp_path / "release.csv"
    with pytest.raises(PartyFailure) as refused:
        run_distributed(
            list(reversed(fed.hops)),
            fed.leader_tls,
            hospital_data,
            hospital_data.spec(L=2, K=10, C="0.5"),
            out,
            rpc_seconds=RPC_SECONDS,
        )
    message = str(refused.value)
    assert message.startswith("handshake: party hospital-"), message
    assert "next hop" in message, message
    assert not out.exists()
    assert all(status(fed, i).session_id == "" for i in range(3))


def test_two_parties_need_the_explicit_override(hospital_data: Dataset, tmp_path: Path) -> None:
    """Two parties learn each other's counts from the sums: refused before any connection."""
    from fedanon.federation.config import Hop

    hops = [Hop("hospital-1", "127.0.0.1:1"), Hop("hospital-2", "127.0.0.1:2")]
    job = make_job(
        hops, None, hospital_data, hospital_data.spec(L=2, K=10, C="0.5"), tmp_path / "release.csv"
    )
    with pytest.raises(FedanonError, match="two parties"):
        fedanon.leader.kinds.lkc.run_lkc(job)
    assert not (tmp_path / "release.csv").exists()


def _rogue_tls(fed: Federation, tmp_path: Path, name: str = "leader") -> TLSFiles:
    """A certificate named `name` from another CA (trusting the real CA for the server)."""
    rogue = create_ca("rogue CA")
    save_ca(rogue, tmp_path / "rogue")
    save_identity(issue_identity(rogue, name, "leader"), tmp_path / "rogue")
    return TLSFiles(
        fed.cert_dir / "ca.crt",
        tmp_path / "rogue" / f"{name}.crt",
        tmp_path / "rogue" / f"{name}.key",
    )


def test_client_certificate_of_another_ca_is_refused(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """A 'leader' certificate from another CA does not get past TLS; nor does no certificate;
    nor does a genuine party certificate asking for the leader's messages or another
    party's status."""
    fed = hospital_federation
    rogue = _rogue_tls(fed, tmp_path)
    stub, channel = party_stub(fed, 0, rogue)
    try:
        with pytest.raises(grpc.RpcError) as refused:
            stub.Status(pb.StatusRequest(), timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        channel.close()

    anonymous = grpc.secure_channel(
        fed.daemons[0].address,
        grpc.ssl_channel_credentials(root_certificates=(fed.cert_dir / "ca.crt").read_bytes()),
        options=[("grpc.ssl_target_name_override", fed.daemons[0].name)],
    )
    try:
        with pytest.raises(grpc.RpcError) as refused:
            pb_grpc.PartyStub(anonymous).Status(pb.StatusRequest(), timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        anonymous.close()

    neighbour = TLSFiles(
        fed.cert_dir / "ca.crt", fed.cert_dir / "hospital-3.crt", fed.cert_dir / "hospital-3.key"
    )
    stub, channel = party_stub(fed, 0, neighbour)
    try:
        with pytest.raises(grpc.RpcError) as refused:
            stub.Status(pb.StatusRequest(), timeout=5)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.RpcError) as refused:
            stub.OpenSession(
                pb.OpenSessionRequest(
                    ref=pb.SessionRef(session_id=secrets.token_hex(16)),
                    lkc=lkc_job_to_proto(hospital_data.spec(L=2, K=10, C="0.5")),
                    ring=[d.name for d in fed.daemons],
                ),
                timeout=5,
            )
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "hospital-3" in (refused.value.details() or "")
    finally:
        channel.close()

    out = tmp_path / "release.csv"
    with pytest.raises(PartyFailure) as failed:
        run_distributed(
            fed.hops,
            rogue,
            hospital_data,
            hospital_data.spec(L=2, K=10, C="0.5"),
            out,
            rpc_seconds=5,
        )
    assert str(failed.value).startswith("handshake: party hospital-")
    assert not out.exists()
    assert all(status(fed, i).session_id == "" for i in range(3))
