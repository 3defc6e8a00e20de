"""Certificates in a real gRPC mutual-TLS handshake on loopback.

A tiny server (the standard health service plus one generic method that reports and checks the
caller) listens on 127.0.0.1 with a random port; clients connect with right and wrong
certificates and expected names.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from functools import partial

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from fedanon.crypto.identity import Identity, certificate_pem
from fedanon.crypto.tls import authorize, secure_channel, server_credentials

# Never share a connection between channels of different tests or credentials.
PRIVATE_POOL = [("grpc.use_local_subchannel_pool", 1)]
TIMEOUT = 10


def whoami(request: bytes, context: grpc.ServicerContext) -> bytes:
    peer = authorize(context, roles={"party", "leader"})
    return f"{peer.name}/{peer.role}".encode()


def leader_only(request: bytes, context: grpc.ServicerContext) -> bytes:
    authorize(context, roles={"leader"})
    return b"ok"


@contextmanager
def serve(identity: Identity, ca_certificate, credentials=None) -> Iterator[int]:
    """Serve on a random loopback port with `server_credentials` unless given others."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    handlers = {
        "WhoAmI": grpc.unary_unary_rpc_method_handler(whoami),
        "LeaderOnly": grpc.unary_unary_rpc_method_handler(leader_only),
    }
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler("fedanon.test.Probe", handlers)]
    )
    credentials = credentials or server_credentials(identity, ca_certificate)
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    try:
        yield port
    finally:
        server.stop(None).wait()


def check(channel: grpc.Channel) -> int:
    request = health_pb2.HealthCheckRequest()
    return health_pb2_grpc.HealthStub(channel).Check(request, timeout=TIMEOUT).status


def call(channel: grpc.Channel, method: str) -> bytes:
    return channel.unary_unary(f"/fedanon.test.Probe/{method}")(b"", timeout=TIMEOUT)


@pytest.fixture(scope="module")
def server_port(federation) -> Iterator[int]:
    """p00 serving with the federation's CA."""
    with serve(federation.parties[0], federation.ca.certificate) as port:
        yield port


def connect(port: int, identity: Identity, ca, expected: str) -> grpc.Channel:
    return secure_channel(f"127.0.0.1:{port}", identity, ca, expected, options=PRIVATE_POOL)


def test_right_certificates_connect_and_the_server_sees_the_caller(federation, server_port):
    ca = federation.ca.certificate
    with connect(server_port, federation.parties[1], ca, "p00") as channel:
        assert check(channel) == health_pb2.HealthCheckResponse.SERVING
        assert call(channel, "WhoAmI") == b"p01/party"
    with connect(server_port, federation.leader, ca, "p00") as channel:
        assert call(channel, "WhoAmI") == b"leader/leader"
        assert call(channel, "LeaderOnly") == b"ok"


def failure(channel: grpc.Channel, rpc) -> grpc.StatusCode:
    """Run `rpc` on `channel` (then close it); it must fail; return the status code."""
    with channel, pytest.raises(grpc.RpcError) as info:
        rpc(channel)
    return info.value.code()


def test_role_check_denies_a_party(federation, server_port) -> None:
    channel = connect(server_port, federation.parties[1], federation.ca.certificate, "p00")
    assert failure(channel, partial(call, method="LeaderOnly")) == grpc.StatusCode.PERMISSION_DENIED


def test_client_certificate_from_another_ca_is_refused(
    federation, other_federation, server_port
) -> None:
    # The client trusts the right CA (so it accepts the server) but presents a foreign cert.
    stranger = other_federation.parties[1]
    channel = connect(server_port, stranger, federation.ca.certificate, "p00")
    assert failure(channel, check) == grpc.StatusCode.UNAVAILABLE


def test_server_with_the_wrong_name_is_refused(federation, server_port) -> None:
    # p00 answers, but the client dialled expecting p02: the handshake must fail.
    channel = connect(server_port, federation.parties[1], federation.ca.certificate, "p02")
    assert failure(channel, check) == grpc.StatusCode.UNAVAILABLE


def test_server_certificate_from_another_ca_is_refused(federation, other_federation) -> None:
    # An impostor named p00 with a certificate from another CA; it would accept our client
    # (it trusts our CA for client certificates), so only the client's check can refuse it.
    impostor = other_federation.parties[0]
    credentials = grpc.ssl_server_credentials(
        [(impostor.key_pem(), impostor.certificate_pem())],
        root_certificates=certificate_pem(federation.ca.certificate),
        require_client_auth=True,
    )
    with serve(impostor, None, credentials) as port:
        channel = connect(port, federation.parties[1], federation.ca.certificate, "p00")
        assert failure(channel, check) == grpc.StatusCode.UNAVAILABLE
        # Control: a client that trusted the other CA would have accepted this server.
        gullible = connect(port, federation.parties[1], other_federation.ca.certificate, "p00")
        with gullible:
            assert check(gullible) == health_pb2.HealthCheckResponse.SERVING


def test_client_without_certificate_is_refused(federation, server_port) -> None:
    credentials = grpc.ssl_channel_credentials(certificate_pem(federation.ca.certificate))
    options = [*PRIVATE_POOL, ("grpc.ssl_target_name_override", "p00")]
    channel = grpc.secure_channel(f"127.0.0.1:{server_port}", credentials, options)
    assert failure(channel, check) == grpc.StatusCode.UNAVAILABLE
