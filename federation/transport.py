"""gRPC servers and channels for the daemons, from the TLS files a configuration names.

Credentials, peer-name checks and caller identities come from `fedanon.crypto.tls`; this module only
adds what processes need around them: loading PEM files, message-size limits, binding the
server, and the --insecure variants (no TLS at all, for local experiments only).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent import futures

import grpc
from cryptography import x509
from grpc_health.v1.health_pb2 import HealthCheckRequest
from grpc_health.v1.health_pb2_grpc import HealthStub

from fedanon.crypto.identity import load_identity_files
from fedanon.crypto.tls import (
    channel_credentials,
    peer_identity,
    server_credentials,
    target_name_options,
)
from fedanon.federation.limits import DEFAULT_LIMITS, ConnectionLimits
from fedanon.federation.tls import TLSFiles

MAX_MESSAGE_BYTES = 1 << 30
_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]
#: Options of the channels that may have to reach a party that restarts mid-session (the
#: leader's session channels, a party's channel to its next hop; docs/distributed.md,
#: "Rejoin"): gRPC's default reconnect backoff grows to minutes, so a party back after a few
#: seconds could otherwise wait as long again before anyone reaches it. Not
#: ``min_reconnect_backoff_ms``: gRPC takes it as the time one connection attempt may take (20 s
#: by default), and a TLS handshake on a loaded machine can need more than a second.
#: The interval between connection attempts while someone waits (an RPC, or `ready_within`)
#: bounds how long after a party listens again it is reached: a quarter second (an attempt to a
#: closed port is refused at once and costs nothing; one to a silent host lasts gRPC's 20 s
#: connect timeout, so attempts never pile up).
RECONNECT_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 250),
]
# gRPC binds with SO_REUSEPORT by default: a second daemon on a live daemon's port would start
# and silently take about half of the new connections. Binding exclusively makes it fail.
_SERVER_OPTIONS = [("grpc.so_reuseport", 0)]


def _ca(tls: TLSFiles) -> x509.Certificate:
    return x509.load_pem_x509_certificate(tls.ca.read_bytes())


def listen_port(listen: str) -> int:
    """The port of a ``host:port`` listen address, refusing what gRPC would silently bend.

    gRPC takes ``host:99999`` modulo 2^16 and a missing port as 443, so a typo would make the
    daemon listen somewhere nobody dials; port 0 (any free port) is useless for a daemon whose
    address the others are configured with.
    """
    _host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"listen address '{listen}' needs a port from 1 to 65535 (host:port)")
    return int(port)


def make_server(
    listen: str,
    tls: TLSFiles | None,
    max_workers: int = 8,
    interceptors: Sequence[grpc.ServerInterceptor] = (),
    max_receive_bytes: int = MAX_MESSAGE_BYTES,
    limits: ConnectionLimits = DEFAULT_LIMITS,
) -> tuple[grpc.Server, int]:
    """A server bound exclusively to `listen` requiring client certificates, and its port.

    `interceptors` see every call with the caller's verified certificate (the party's gate
    authorizes and bounds requests with one; the leakage tests record the wire with another).
    gRPC refuses a request larger than `max_receive_bytes` from its length prefix, before
    reading it, so an oversized message costs the server no memory. `limits` bound what
    unauthenticated and idle connections can hold.
    """
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers),
        options=[
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", max_receive_bytes),
            *_SERVER_OPTIONS,
            *limits.options(),
        ],
        interceptors=list(interceptors),
    )
    if tls is None:
        return server, server.add_insecure_port(listen)
    identity = load_identity_files(tls.cert, tls.key)
    return server, server.add_secure_port(listen, server_credentials(identity, _ca(tls)))


def make_channel(
    address: str,
    expected_name: str,
    tls: TLSFiles | None,
    options: Sequence[tuple[str, int]] = (),
) -> grpc.Channel:
    """A channel to `address` whose server must present a certificate for `expected_name`;
    `options` adds gRPC channel options (a start-up probe's short reconnect backoff)."""
    if tls is None:
        return grpc.insecure_channel(address, options=[*_OPTIONS, *options])
    identity = load_identity_files(tls.cert, tls.key)
    return grpc.secure_channel(
        address,
        channel_credentials(identity, _ca(tls)),
        options=[*_OPTIONS, *target_name_options(expected_name), *options],
    )


def peer_name(context: grpc.ServicerContext) -> str | None:
    """The certificate name of the (TLS-authenticated) caller."""
    return peer_identity(context).name


def ready_within(channel: grpc.Channel, seconds: float) -> bool:
    """Whether `channel` connects within `seconds`: the wait for a party that went away (the
    leader's rejoin, a ring hop's retry of its next hop) ends as soon as the channel's next
    connection attempt (``RECONNECT_OPTIONS``) finds it listening, not after a fixed delay.

    A health check that waits for the connection (``wait_for_ready``): an answer, or a failure
    other than the time running out, says the party listens again (its next RPC says the rest).
    gRPC looks for signals while a blocking call waits, so a SIGTERM ends this wait at once.
    Not ``grpc.channel_ready_future``: it subscribes to the channel's connectivity, which starts
    a gRPC polling thread (a daemon thread, alive past the wait) that takes the channel's
    connectivity lock; a process that exited at once after the wait (a terminated leader) hung
    in the channel's finalizer, waiting for that lock (a faulthandler dump of the hung exit)."""
    try:
        HealthStub(channel).Check(
            HealthCheckRequest(service=""), timeout=seconds, wait_for_ready=True
        )
    except grpc.RpcError as exc:
        return bool(exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED)
    return True
