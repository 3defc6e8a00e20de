"""Connection hygiene of a real party daemon: what anyone who can reach its port can make it hold.

One daemon process (mutual TLS, party.toml ``[limits]`` tightened so that the test runs in
seconds: a 1 s handshake deadline, 40 connections, 2 s idle) is flooded from loopback with
silent TCP connections, half-sent TLS ClientHellos, more connections than its cap, idle
connections of a CA-signed stranger, and large requests from callers it does not serve. Its
descriptors (/proc/PID/fd) and memory (VmRSS, VmHWM) must stay bounded and come back near their
baseline within a bounded time, and the leader must still be served during and after each flood.
Every loop is bounded, every socket is closed on every exit path, the daemon is stopped at the
end whatever happens.
"""

from __future__ import annotations

import os
import select
import socket
import ssl
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import ExitStack, contextmanager
from pathlib import Path

import grpc
import pytest

from fedanon.configschema import ConfigError
from fedanon.crypto.identity import load_ca
from fedanon.federation.limits import MAX_STREAMS_PER_CONNECTION
from fedanon.federation.tls import TLSFiles
from fedanon.leader.sim import (
    Daemon,
    Federation,
    free_ports,
    issue_federation_certificates,
    write_party_config,
)
from fedanon.party.config import PartyConfig
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from tests.crypto import badcerts
from tests.distributed.test_authorization import channel_with, tls_of
from tests.harness.wait import holds_for, wait_until

HANDSHAKE_SECONDS = 1.0
MAX_CONNECTIONS = 40
IDLE_SECONDS = 2.0
LIMITS = f"""
[limits]
handshake_seconds = {HANDSHAKE_SECONDS}
max_connections = {MAX_CONNECTIONS}
idle_seconds = {IDLE_SECONDS}
"""
SLACK_FDS = 6  # descriptors a daemon may open on its own meanwhile (a log rotation, a pipe)
SETTLE_SECONDS = 15.0  # bound on "comes back": deadlines plus scheduling on a loaded machine
# The start of a TLS 1.2 ClientHello record announcing 512 bytes, of which only these arrive.
PARTIAL_CLIENT_HELLO = bytes.fromhex("160301020001000200fc0303") + bytes(20)
BIG_BYTES = 120 * 1000 * 1000  # below max_message_mb (128 MiB): gRPC itself lets it in


def start(root: Path, secure: bool) -> Federation:
    """One daemon, hospital-1, with `LIMITS` (no idle key pool: it would move VmRSS)."""
    issue_federation_certificates(root / "certs", ["hospital-1", "hospital-2"], "limits test CA")
    generate_hospital(300, seed=2).to_csv(root / "hospital-1.csv", index=False)
    (port,) = free_ports(1)
    config = root / "hospital-1.toml"
    write_party_config(
        config,
        "hospital-1",
        port,
        root / "hospital-1.csv",
        hospital_taxonomy_path(),
        None,
        root / "certs",
        rpc_seconds=30,
        idle_keys=0,
    )
    config.write_text(config.read_text() + LIMITS)
    daemon = Daemon("hospital-1", f"127.0.0.1:{port}", config, root / "hospital-1.log")
    certs = root / "certs"
    leader_tls = TLSFiles(certs / "ca.crt", certs / "leader.crt", certs / "leader.key")
    fed = Federation(
        root, [daemon], leader_tls if secure else None, certs, hospital_taxonomy_path(), secure
    )
    fed.start(daemon)
    try:
        fed.wait_ready(daemon)
    except BaseException:
        fed.stop(daemon)
        raise
    return fed


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Federation]:
    fed = start(tmp_path_factory.mktemp("limits"), secure=True)
    try:
        yield fed
    finally:
        fed.stop_all()


def pid(fed: Federation) -> int:
    process = fed.daemons[0].process
    assert process is not None and process.poll() is None, fed.daemons[0].log_tail()
    return process.pid


def descriptors(fed: Federation) -> int:
    return len(os.listdir(f"/proc/{pid(fed)}/fd"))


def memory_mb(fed: Federation, key: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid(fed)}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {key} in /proc/{pid(fed)}/status")


def leader_status(fed: Federation, timeout: float = 20.0) -> pb.StatusReply:
    """Status as the leader, on a fresh connection (so it needs a free connection slot)."""
    tls = fed.leader_tls
    assert tls is not None
    address, name = fed.daemons[0].address, fed.daemons[0].name
    with channel_with(address, name, tls.ca, tls.cert.read_bytes(), tls.key.read_bytes()) as ch:
        return pb_grpc.PartyStub(ch).Status(pb.StatusRequest(), timeout=timeout)


def settled_baseline(fed: Federation) -> int:
    """The daemon's descriptors once the connections of earlier checks are gone."""
    leader_status(fed)
    counts: list[int] = []

    def stable() -> bool:
        counts.append(descriptors(fed))
        return len(counts) >= 5 and len(set(counts[-5:])) == 1

    assert wait_until(stable, SETTLE_SECONDS, interval=0.1), counts[-10:]
    return counts[-1]


@contextmanager
def raw_connections(
    fed: Federation, count: int, first_bytes: bytes
) -> Iterator[list[socket.socket]]:
    """`count` TCP connections to the daemon that send `first_bytes` and then nothing."""
    host, port = fed.daemons[0].address.rsplit(":", 1)
    with ExitStack() as stack:
        sockets = []
        for _ in range(count):
            sock = stack.enter_context(socket.create_connection((host, int(port)), timeout=10))
            if first_bytes:
                sock.sendall(first_bytes)
            sockets.append(sock)
        yield sockets


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the daemon has closed this connection (EOF or reset), without waiting."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(4096) == b""
    except OSError:
        return True


@pytest.mark.parametrize(
    "first_bytes", [b"", PARTIAL_CLIENT_HELLO], ids=["silent", "partial-client-hello"]
)
def test_half_open_connections_are_closed_at_the_handshake_deadline(
    daemon: Federation, first_bytes: bytes
) -> None:
    """30 connections that never finish a TLS handshake hold a descriptor each only until
    handshake_seconds (gRPC's default: 120 s); the leader is served meanwhile."""
    base = settled_baseline(daemon)
    with raw_connections(daemon, 30, first_bytes) as sockets:
        assert wait_until(lambda: descriptors(daemon) >= base + 25, 5), descriptors(daemon)
        started = time.monotonic()
        assert leader_status(daemon).sessions_served == 0  # served during the flood
        assert wait_until(lambda: all(closed_by_peer(s) for s in sockets)), sum(
            not closed_by_peer(s) for s in sockets
        )
        waited = time.monotonic() - started
        assert wait_until(lambda: descriptors(daemon) <= base + SLACK_FDS), (
            descriptors(daemon),
            base,
        )
    assert waited < SETTLE_SECONDS


def test_connections_beyond_the_cap_hold_no_descriptor(daemon: Federation) -> None:
    """Three times max_connections silent connections: the daemon never holds more than the cap
    (the others are closed when accepted, or wait in the kernel's queue), and once the
    handshake deadline frees the slots the leader is served, the flood still open."""
    base = settled_baseline(daemon)
    looks: list[int] = []

    def within_cap() -> bool:
        looks.append(descriptors(daemon))
        return looks[-1] <= base + MAX_CONNECTIONS + SLACK_FDS

    with raw_connections(daemon, 3 * MAX_CONNECTIONS, b"") as sockets:
        assert holds_for(within_cap, 2 * HANDSHAKE_SECONDS), (max(looks), base)
        assert leader_status(daemon).sessions_served == 0
        assert wait_until(lambda: all(closed_by_peer(s) for s in sockets))
    assert wait_until(lambda: descriptors(daemon) <= base + SLACK_FDS), descriptors(daemon)


def test_idle_connections_of_a_stranger_are_closed(daemon: Federation, tmp_path: Path) -> None:
    """Ten CA-signed connections of a party with no business here, each refused once and then
    left open without calls: the daemon closes them after idle_seconds (gRPC's default: never)
    while the clients still hold them."""
    base = settled_baseline(daemon)
    stranger = tls_of(daemon, "hospital-2")
    address, name = daemon.daemons[0].address, daemon.daemons[0].name
    with ExitStack() as stack:
        for _ in range(10):
            channel = stack.enter_context(
                channel_with(
                    address,
                    name,
                    stranger.ca,
                    stranger.cert.read_bytes(),
                    stranger.key.read_bytes(),
                )
            )
            with pytest.raises(grpc.RpcError) as refused:
                pb_grpc.PartyStub(channel).Status(pb.StatusRequest(), timeout=10)
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert descriptors(daemon) >= base + 8
        assert wait_until(lambda: descriptors(daemon) <= base + SLACK_FDS), (
            descriptors(daemon),
            base,
        )


def big_sum() -> pb.SumRequest:
    return pb.SumRequest(
        ref=pb.SessionRef(session_id="0" * 32),
        partial=pb.Vector(data=bytes(BIG_BYTES), length=BIG_BYTES // 8, dtype="<u8"),
    )


def test_unauthorized_large_requests_are_refused_before_they_are_buffered(
    daemon: Federation, tmp_path: Path
) -> None:
    """Four concurrent 120 MB Sums (under max_message_mb) from a stranger and from a CA-signed
    'leader' certificate that is a CA certificate: all refused, and the daemon's peak memory
    grows by less than 40 MB (reading them would cost over 3x their size); the leader is served
    meanwhile."""
    ca_cert = badcerts.write(
        load_ca(daemon.cert_dir), tmp_path, "leader", badcerts.PROFILES["intermediate CA as leader"]
    )
    callers = [tls_of(daemon, "hospital-2").cert, ca_cert[0]]
    keys = [tls_of(daemon, "hospital-2").key, ca_cert[1]]
    ca = daemon.cert_dir / "ca.crt"
    address, name = daemon.daemons[0].address, daemon.daemons[0].name
    request = big_sum()
    settled_baseline(daemon)
    peak_before = memory_mb(daemon, "VmHWM")
    with ExitStack() as stack:
        stubs = [
            pb_grpc.PartyStub(
                stack.enter_context(
                    channel_with(address, name, ca, cert.read_bytes(), key.read_bytes())
                )
            )
            for cert, key in zip(callers, keys, strict=True)
            for _ in range(2)
        ]
        with futures.ThreadPoolExecutor(len(stubs)) as pool:
            calls = [pool.submit(refusal, stub, request) for stub in stubs]
            assert leader_status(daemon).sessions_served == 0
            codes = [call.result(timeout=120) for call in calls]
    assert set(codes) <= {grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED}
    assert codes.count(grpc.StatusCode.UNAUTHENTICATED) == 2, codes  # the CA certificate
    grew = memory_mb(daemon, "VmHWM") - peak_before
    assert grew < 40, f"peak memory grew {grew:.0f} MB for refused requests"


def refusal(stub: pb_grpc.PartyStub, request: pb.SumRequest) -> grpc.StatusCode:
    try:
        stub.Sum(request, timeout=60)
    except grpc.RpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


def test_memory_of_a_large_refused_request_from_the_leader_returns(daemon: Federation) -> None:
    """The leader itself may send up to max_message_mb, so gRPC reads its 120 MB Sum before the
    gate refuses it for the open job (none: RESOURCE_EXHAUSTED); afterwards the daemon's
    resident memory is back within 20 MB of where it was (glibc kept about 45 MB of gRPC's
    receive buffers before)."""
    settled_baseline(daemon)
    before = memory_mb(daemon)
    tls = daemon.leader_tls
    assert tls is not None
    address, name = daemon.daemons[0].address, daemon.daemons[0].name
    with channel_with(address, name, tls.ca, tls.cert.read_bytes(), tls.key.read_bytes()) as ch:
        code = refusal(pb_grpc.PartyStub(ch), big_sum())
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert wait_until(lambda: memory_mb(daemon) < before + 20), (memory_mb(daemon), before)


def test_an_insecure_daemon_checks_sizes_too(tmp_path: Path) -> None:
    """Without TLS nobody is authenticated, but a request larger than the open job (here: no
    job) can need is still refused before it is parsed."""
    fed = start(tmp_path, secure=False)
    try:
        address = fed.daemons[0].address
        with grpc.insecure_channel(
            address, options=[("grpc.max_send_message_length", 1 << 30)]
        ) as channel:
            request = pb.SumRequest(
                ref=pb.SessionRef(session_id="0" * 32),
                partial=pb.Vector(data=bytes(1 << 20), length=(1 << 20) // 8, dtype="<u8"),
            )
            code = refusal(pb_grpc.PartyStub(channel), request)
            status = pb_grpc.PartyStub(channel).Status(pb.StatusRequest(), timeout=10)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert status.last_error == ""
        assert "exceeds" in fed.daemons[0].log.read_text()
    finally:
        fed.stop_all()


MINIMAL_CONFIG = (
    'name = "hospital-1"\nlisten = "127.0.0.1:50051"\ndata = "a.csv"\n[tls]\ninsecure = true\n'
)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("handshake_seconds", "0"),
        ("handshake_seconds", "601"),
        ("max_connections", "3"),
        ("max_connections", "1e3"),
        ("max_connections", "70000"),
        ("idle_seconds", "0.5"),
        ("idle_seconds", "nan"),
    ],
)
def test_connection_limits_out_of_range_are_one_line_errors(
    tmp_path: Path, key: str, value: str
) -> None:
    """A limit that would disarm the daemon (no handshake time, fewer connections than the
    federation needs, idle connections cut mid-job) is refused at load, naming file and key."""
    path = tmp_path / "party.toml"
    (tmp_path / "a.csv").write_text("age\n30\n")  # so that only the limit can be at fault
    path.write_text(f"{MINIMAL_CONFIG}[limits]\n{key} = {value}\n")
    with pytest.raises(ConfigError) as refused:
        PartyConfig.load(path)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message and key in message, message


def test_connection_limits_reach_the_server_options(tmp_path: Path) -> None:
    path = tmp_path / "party.toml"
    (tmp_path / "a.csv").write_text("age\n30\n")  # inputs are checked at load
    path.write_text(
        f"{MINIMAL_CONFIG}[limits]\n"
        "handshake_seconds = 2.5\nmax_connections = 9\nidle_seconds = 60\n"
    )
    options = dict(PartyConfig.load(path).connections.options())
    assert options["grpc.server_handshake_timeout_ms"] == 2500
    assert options["grpc.max_allowed_incoming_connections"] == 9
    assert options["grpc.max_connection_idle_ms"] == 60_000


def test_the_server_announces_its_stream_limit(daemon: Federation) -> None:
    """The daemon's first HTTP/2 SETTINGS frame (read over a real mutual-TLS connection as the
    leader) caps concurrent streams per connection (gRPC's default: no cap) and header size."""
    tls = daemon.leader_tls
    assert tls is not None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(str(tls.ca))
    context.load_cert_chain(str(tls.cert), str(tls.key))
    context.set_alpn_protocols(["h2"])
    host, port = daemon.daemons[0].address.rsplit(":", 1)
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=daemon.daemons[0].name) as conn,
    ):
        empty_settings = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
        conn.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + empty_settings)
        frame = b""
        while len(frame) < 9 or len(frame) < 9 + int.from_bytes(frame[:3], "big"):
            chunk = conn.recv(4096)
            assert chunk, "connection closed before the server's SETTINGS"
            frame += chunk
    assert frame[3] == 4, f"first frame type {frame[3]}, expected SETTINGS"
    payload = frame[9 : 9 + int.from_bytes(frame[:3], "big")]
    settings = {
        int.from_bytes(payload[i : i + 2], "big"): int.from_bytes(payload[i + 2 : i + 6], "big")
        for i in range(0, len(payload), 6)
    }
    assert settings.get(0x3) == MAX_STREAMS_PER_CONNECTION  # SETTINGS_MAX_CONCURRENT_STREAMS
    assert settings.get(0x6, 1 << 30) <= 16 * 1024  # SETTINGS_MAX_HEADER_LIST_SIZE
