"""Who may call what, with real daemons: every RPC against a wrong caller, a wrong session id and
a wrong job kind; malformed certificates; oversized requests.

The test acts as the leader itself (with the federation's leader certificate) to hold a session
open at party 2, whose ring predecessor is party 1, and then calls every RPC of the Party
service as somebody else. Each refusal must have the right status code, must not tell a stranger
anything about the session, and must change nothing the party reports in ``Status`` (session,
last error, sessions served); the session must still be alive afterwards.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pandas as pd
import pytest

from fedanon.crypto.identity import (
    issue_identity,
    load_ca,
    save_identity,
)
from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_channel
from fedanon.leader.sim import Federation, federation
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from tests.crypto import badcerts
from tests.distributed.conftest import Dataset, status

PARTY = 1  # party 2 (hospital-2): its ring predecessor is hospital-1
PREDECESSOR = "hospital-1"
STRANGER = "hospital-3"  # a federation party with no business at party 2 (its successor)


def ref(session_id: str, iteration: int = 0) -> pb.SessionRef:
    return pb.SessionRef(session_id=session_id, iteration=iteration)


def requests(session_id: str, job: pb.LKCJob, ring: list[str]) -> dict[str, Any]:
    """One well-formed request per RPC of the Party service, for `session_id`."""
    return {
        "OpenSession": pb.OpenSessionRequest(ref=ref(secrets.token_hex(16)), lkc=job, ring=ring),
        "ShareKeys": pb.ShareKeysRequest(ref=ref(session_id)),
        "Sum": pb.SumRequest(ref=ref(session_id)),
        "Union": pb.UnionRequest(ref=ref(session_id), phase=pb.UNION_PHASE_MEASURE),
        "Ids": pb.IdsRequest(ref=ref(session_id), send_yours=True),
        "Project": pb.ProjectRequest(ref=ref(session_id)),
        "Assign": pb.AssignRequest(ref=ref(session_id), clusters=[0]),
        "End": pb.EndRequest(ref=ref(session_id), abort=True, reason="not yours"),
        "Renew": pb.RenewRequest(ref=ref(session_id)),
        "Randomize": pb.RandomizeRequest(ref=ref(session_id)),
        "C45Count": pb.C45CountRequest(ref=ref(session_id, 1)),
        "KactusStep": pb.KactusStepRequest(ref=ref(session_id, 1), step="encode"),
        "EvaluateClassify": pb.EvaluateClassifyRequest(ref=ref(session_id, 1), figure="CE"),
        "Status": pb.StatusRequest(),
        "Rejoin": pb.RejoinRequest(ref=ref(session_id, 1)),
        "Rerun": pb.RekeyRerunRequest(ref=pb.SessionRef(session_id=session_id, attempt=1)),
    }


def hospital_requests(fed: Federation, data: Dataset, session_id: str) -> dict[str, Any]:
    """`requests` for an LKC job on the hospital data over the federation's whole ring."""
    job = lkc_job_to_proto(data.spec(L=2, K=10, C="0.5"))
    return requests(session_id, job, [d.name for d in fed.daemons])


ALL_RPCS = list(pb.DESCRIPTOR.services_by_name["Party"].methods_by_name)


def call(stub: pb_grpc.PartyStub, method: str, request: Any) -> tuple[grpc.StatusCode, str]:
    """The status code and details of one call (OK and '' when it was accepted)."""
    try:
        getattr(stub, method)(request, timeout=10)
    except grpc.RpcError as exc:
        return exc.code(), exc.details() or ""
    return grpc.StatusCode.OK, ""


def channel_with(
    address: str, server_name: str, ca: Path, cert_pem: bytes, key_pem: bytes
) -> grpc.Channel:
    """A mutual-TLS channel presenting any certificate, even one fedanon would not load."""
    credentials = grpc.ssl_channel_credentials(
        root_certificates=ca.read_bytes(), private_key=key_pem, certificate_chain=cert_pem
    )
    return grpc.secure_channel(
        address,
        credentials,
        options=[
            ("grpc.ssl_target_name_override", server_name),
            ("grpc.max_send_message_length", 1 << 30),
        ],
    )


def tls_of(fed: Federation, name: str) -> TLSFiles:
    return TLSFiles(
        fed.cert_dir / "ca.crt", fed.cert_dir / f"{name}.crt", fed.cert_dir / f"{name}.key"
    )


def stub_as(
    fed: Federation, tls: TLSFiles, index: int = PARTY
) -> tuple[pb_grpc.PartyStub, grpc.Channel]:
    daemon = fed.daemons[index]
    channel = channel_with(
        daemon.address, daemon.name, tls.ca, tls.cert.read_bytes(), tls.key.read_bytes()
    )
    return pb_grpc.PartyStub(channel), channel


def forged_certificate(
    fed: Federation, directory: Path, stem: str, names: list[str], role: str | None
) -> TLSFiles:
    """A certificate the federation CA really signed, but with `names` as its SAN DNS names
    (none: no SAN at all) and `role` as its OU (None: no role)."""
    profile = badcerts.Profile(roles=() if role is None else (role,), names=tuple(names))
    cert_path, key_path = badcerts.write(load_ca(fed.cert_dir), directory, stem, profile)
    return TLSFiles(fed.cert_dir / "ca.crt", cert_path, key_path)


def leader_named_party(fed: Federation, directory: Path) -> TLSFiles:
    """A certificate the federation CA issued for the name 'leader' but the role 'party'."""
    save_identity(issue_identity(load_ca(fed.cert_dir), "leader", "party"), directory)
    return TLSFiles(fed.cert_dir / "ca.crt", directory / "leader.crt", directory / "leader.key")


def party_state(fed: Federation, index: int = PARTY) -> tuple[str, str, int]:
    reply = status(fed, index)
    return reply.session_id, reply.last_error, reply.sessions_served


@pytest.fixture
def open_session(hospital_federation: Federation, hospital_data: Dataset) -> Iterator[str]:
    """An LKC session opened at party 2 by the test acting as the leader; aborted afterwards."""
    fed = hospital_federation
    job = lkc_job_to_proto(hospital_data.spec(L=2, K=10, C="0.5"))
    session_id = secrets.token_hex(16)
    channel = make_channel(fed.daemons[PARTY].address, fed.daemons[PARTY].name, fed.leader_tls)
    stub = pb_grpc.PartyStub(channel)
    try:
        stub.OpenSession(
            pb.OpenSessionRequest(ref=ref(session_id), lkc=job, ring=[d.name for d in fed.daemons]),
            timeout=30,
        )
        yield session_id
    finally:
        stub.End(pb.EndRequest(ref=ref(session_id), abort=True, reason="test over"), timeout=10)
        channel.close()


def assert_session_alive(fed: Federation, session_id: str) -> None:
    """The leader can still renew the session's lease: nobody took it away."""
    stub, channel = stub_as(fed, fed.leader_tls)  # type: ignore[arg-type]
    try:
        assert call(stub, "Renew", pb.RenewRequest(ref=ref(session_id))) == (grpc.StatusCode.OK, "")
    finally:
        channel.close()


def refusals(
    fed: Federation, tls: TLSFiles, made: dict[str, Any], methods: list[str]
) -> dict[str, tuple[grpc.StatusCode, str]]:
    stub, channel = stub_as(fed, tls)
    try:
        return {m: call(stub, m, made[m]) for m in methods}
    finally:
        channel.close()


# ------------------------------------------------------------------------------ wrong caller
def test_every_rpc_refuses_a_party_with_no_business_here(
    hospital_federation: Federation, hospital_data: Dataset, open_session: str, tmp_path: Path
) -> None:
    """hospital-3 (a genuine party certificate, but not party 2's predecessor) and a CA-signed
    certificate named 'leader' with role 'party' call every RPC: all PERMISSION_DENIED, the
    session id never in the answer, Status unchanged, the session alive."""
    fed = hospital_federation
    before = party_state(fed)
    made = hospital_requests(fed, hospital_data, open_session)
    for tls, who in (
        (tls_of(fed, STRANGER), f"'{STRANGER}' (party)"),
        (leader_named_party(fed, tmp_path), "'leader' (party)"),
    ):
        answers = refusals(fed, tls, made, ALL_RPCS)
        for method, (code, details) in answers.items():
            assert code == grpc.StatusCode.PERMISSION_DENIED, (who, method, code, details)
            assert details.startswith("party hospital-2:") and who in details, details
            assert open_session[:12] not in details, (method, details)
    assert party_state(fed) == before
    assert_session_alive(fed, open_session)


def test_leader_only_rpcs_refuse_the_ring_predecessor(
    hospital_federation: Federation, hospital_data: Dataset, open_session: str
) -> None:
    """hospital-1 may forward the ring's messages to party 2, and nothing else: every other RPC
    (with the right session id) is PERMISSION_DENIED naming it; Status unchanged."""
    fed = hospital_federation
    before = party_state(fed)
    made = hospital_requests(fed, hospital_data, open_session)
    leader_only = [m for m in ALL_RPCS if m != "Sum"]  # Union here is MEASURE: leader only
    answers = refusals(fed, tls_of(fed, PREDECESSOR), made, leader_only)
    for method, (code, details) in answers.items():
        assert code == grpc.StatusCode.PERMISSION_DENIED, (method, code, details)
        assert f"caller '{PREDECESSOR}' (party) may not send" in details, (method, details)
    assert party_state(fed) == before
    assert_session_alive(fed, open_session)


# ------------------------------------------------------------------------ wrong session id
def test_every_session_rpc_refuses_another_session_id(
    hospital_federation: Federation, hospital_data: Dataset, open_session: str
) -> None:
    """The leader's own certificate with a session id that is not the open one: every session
    RPC is FAILED_PRECONDITION, End of another session is a no-op, a second OpenSession is
    refused as busy, and Status (session, last error, count) is unchanged."""
    fed = hospital_federation
    before = party_state(fed)
    job = lkc_job_to_proto(hospital_data.spec(L=2, K=10, C="0.5"))
    made = requests(secrets.token_hex(16), job, [d.name for d in fed.daemons])
    session_rpcs = ["ShareKeys", "Sum", "Union", "Ids", "Project", "Assign", "Renew"]
    answers = refusals(fed, fed.leader_tls, made, [*session_rpcs, "End", "OpenSession"])  # type: ignore[arg-type]
    for method in session_rpcs:
        code, details = answers[method]
        assert code == grpc.StatusCode.FAILED_PRECONDITION, (method, code, details)
        assert "the open session is another one" in details, (method, details)
    assert answers["End"] == (grpc.StatusCode.OK, "")
    code, details = answers["OpenSession"]
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "busy" in details, details
    assert party_state(fed) == before
    assert_session_alive(fed, open_session)


# ---------------------------------------------------------------------------- wrong job kind
def test_lkc_session_refuses_drbt_messages(
    hospital_federation: Federation, hospital_data: Dataset, open_session: str
) -> None:
    """Ids, Project and Assign with the open LKC session's own id are FAILED_PRECONDITION."""
    fed = hospital_federation
    before = party_state(fed)
    made = requests(open_session, lkc_job_to_proto(hospital_data.spec(L=2, K=10, C="0.5")), [])
    answers = refusals(fed, fed.leader_tls, made, ["Ids", "Project", "Assign"])  # type: ignore[arg-type]
    for method, (code, details) in answers.items():
        assert code == grpc.StatusCode.FAILED_PRECONDITION, (method, code, details)
        assert details.endswith("is a 'lkc' job, not a 'drbt' one"), (method, details)
    assert party_state(fed) == before
    assert_session_alive(fed, open_session)


@pytest.fixture(scope="module")
def drbt_party(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Federation]:
    """One real daemon holding a numeric block and no taxonomy (a DRBT-only party)."""
    table = pd.DataFrame(
        {
            "pid": [f"P{i}" for i in range(20)],
            "a0": [float(i) for i in range(20)],
            "a1": [float(i % 7) for i in range(20)],
        }
    )
    with federation(
        [table], None, secure=True, workdir=tmp_path_factory.mktemp("drbt-party")
    ) as fed:
        yield fed


def test_drbt_session_refuses_lkc_messages(drbt_party: Federation) -> None:
    """ShareKeys, Sum and Union with the open DRBT session's own id are FAILED_PRECONDITION."""
    fed = drbt_party
    session_id = secrets.token_hex(16)
    stub, channel = stub_as(fed, fed.leader_tls, index=0)  # type: ignore[arg-type]
    try:
        stub.OpenSession(
            pb.OpenSessionRequest(
                ref=ref(session_id),
                ring=["hospital-1"],
                drbt=pb.DRBTJob(id_column="pid", matrix="sparse"),
            ),
            timeout=30,
        )
        before = party_state(fed, 0)
        made = requests(session_id, pb.LKCJob(), [])
        for method in ("ShareKeys", "Sum", "Union"):
            code, details = call(stub, method, made[method])
            assert code == grpc.StatusCode.FAILED_PRECONDITION, (method, code, details)
            assert details.endswith(
                "is a 'drbt' job, not a 'lkc' or 'randomize' or 'c45' or 'kactus' or 'evaluate' one"
            ), (method, details)
        assert party_state(fed, 0) == before
        assert call(stub, "Renew", made["Renew"]) == (grpc.StatusCode.OK, "")
    finally:
        stub.End(pb.EndRequest(ref=ref(session_id), abort=True), timeout=10)
        channel.close()


# ----------------------------------------------------------------------- malformed identities
MALFORMED = {
    "no role": (["hospital-9"], None),
    "no name": ([], "party"),
    "two names": (["leader", "hospital-9"], "leader"),
    "unknown role": (["leader"], "admin"),
}


def test_malformed_certificates_are_refused_with_a_clear_status(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """CA-signed certificates without a role, without a name, with two names or an unknown role:
    every RPC is UNAUTHENTICATED with a reason, one log line each and no traceback in the
    daemon's log; Status unchanged."""
    fed = hospital_federation
    log = fed.daemons[PARTY].log
    log_start = log.stat().st_size
    before = party_state(fed)
    made = hospital_requests(fed, hospital_data, secrets.token_hex(16))
    for label, (names, role) in MALFORMED.items():
        tls = forged_certificate(fed, tmp_path / label.replace(" ", "-"), "forged", names, role)
        for method, (code, details) in refusals(fed, tls, made, ALL_RPCS).items():
            assert code == grpc.StatusCode.UNAUTHENTICATED, (label, method, code, details)
            assert "malformed client certificate" in details, (label, method, details)
    assert party_state(fed) == before
    written = log.read_bytes()[log_start:].decode(errors="replace")
    assert "Traceback" not in written, written[-2000:]
    assert written.count("malformed client certificate") == len(MALFORMED) * len(ALL_RPCS)


# --------------------------------------------------------------------------- oversized requests
def peak_rss_kb(pid: int) -> int:
    """The process's peak resident set size so far (VmHWM), in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


OVERSIZE_BYTES = 300 * 1000 * 1000  # over the default max_message_mb (128 MiB)
MIDSIZE_BYTES = 10 * 1000 * 1000  # under it, but far over what the open job's Sum can need


def test_oversized_requests_are_refused_before_they_are_read(
    hospital_federation: Federation, open_session: str, tmp_path: Path
) -> None:
    """A 300 MB Sum from another party's certificate is refused unread (PERMISSION_DENIED: the
    gate refuses the caller before the request is read), and from the leader too (over
    max_message_mb: RESOURCE_EXHAUSTED from its length prefix); the daemon's peak memory grows
    by less than 50 MB (reading it would add at least 300 MB); a 10 MB one from that party, or
    from a certificate named 'leader' with role 'party', is PERMISSION_DENIED (refused before it
    is sized or parsed), and a 10 MB one from the leader itself exceeds what the open job's next
    Sum can need (RESOURCE_EXHAUSTED): Status unchanged."""
    fed = hospital_federation
    process = fed.daemons[PARTY].process
    assert process is not None
    before = party_state(fed)
    huge = pb.SumRequest(
        ref=ref(open_session),
        partial=pb.Vector(data=bytes(OVERSIZE_BYTES), length=OVERSIZE_BYTES // 8, dtype="<u8"),
    )
    peak_before = peak_rss_kb(process.pid)
    stranger, channel = stub_as(fed, tls_of(fed, STRANGER))
    try:
        code, details = call(stranger, "Sum", huge)
        assert code == grpc.StatusCode.PERMISSION_DENIED, (code, details)
        leader, leader_channel = stub_as(fed, fed.leader_tls)  # type: ignore[arg-type]
        with leader_channel:
            code, details = call(leader, "Sum", huge)
        del huge
        peak_after = peak_rss_kb(process.pid)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, (code, details)
        assert peak_after - peak_before < 50_000, f"peak RSS grew {peak_after - peak_before} kB"

        mid = pb.SumRequest(
            ref=ref(open_session),
            partial=pb.Vector(data=bytes(MIDSIZE_BYTES), length=MIDSIZE_BYTES // 8, dtype="<u8"),
        )
        code, details = call(stranger, "Sum", mid)
        assert code == grpc.StatusCode.PERMISSION_DENIED, (code, details)
        assert open_session[:12] not in details
    finally:
        channel.close()
    fake_leader, channel = stub_as(fed, leader_named_party(fed, tmp_path))
    try:
        code, details = call(fake_leader, "Sum", mid)
        assert code == grpc.StatusCode.PERMISSION_DENIED, (code, details)
    finally:
        channel.close()
    leader, channel = stub_as(fed, fed.leader_tls)  # type: ignore[arg-type]
    try:
        code, details = call(leader, "Sum", mid)
    finally:
        channel.close()
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, (code, details)
    assert f"request of {mid.ByteSize()} bytes exceeds" in details, details
    assert party_state(fed) == before
    assert_session_alive(fed, open_session)


# ------------------------------------------------------------- certificates unfit for the role
def test_leader_certificates_unfit_for_the_role_are_refused_on_every_rpc(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """CA-signed certificates naming the leader, with its role, that lack what a member's
    certificate must have (key usage, CA=false, clientAuth, one role OU; an intermediate CA
    certificate as the leader's): every RPC is refused (UNAUTHENTICATED at the gate, or the TLS
    handshake itself), nothing is opened, Status unchanged, no traceback."""
    fed = hospital_federation
    log = fed.daemons[PARTY].log
    log_start = log.stat().st_size
    before = party_state(fed)
    made = hospital_requests(fed, hospital_data, secrets.token_hex(16))
    ca = load_ca(fed.cert_dir)
    for label, profile in badcerts.PROFILES.items():
        cert, key = badcerts.write(ca, tmp_path / badcerts.slug(label), "leader", profile)
        tls = TLSFiles(fed.cert_dir / "ca.crt", cert, key)
        for method, (code, details) in refusals(fed, tls, made, ALL_RPCS).items():
            assert code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.UNAVAILABLE), (
                label,
                method,
                code,
                details,
            )
    assert party_state(fed) == before
    written = log.read_bytes()[log_start:].decode(errors="replace")
    assert "Traceback" not in written, written[-2000:]
