"""What a daemon's gRPC server accepts from the network before any caller is authenticated.

A plain dataclass (no gRPC import) so that configuration code can build one; the server
(`fedanon.federation.transport.make_server`) turns it into gRPC core channel arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

# Streams one connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; a client
# queues more rather than failing). The leader has a few at a time (a call and its heartbeat).
MAX_STREAMS_PER_CONNECTION = 16
# The server pings a connection silent this long and drops it if the answer takes longer than the
# timeout: a peer that vanished (or froze) does not keep its descriptor.
KEEPALIVE_MS, KEEPALIVE_TIMEOUT_MS = 60_000, 20_000
# Clients may ping this often, with or without calls (their own keepalive); faster pings are
# strikes, and the third strike closes the connection (gRPC's ping-flood protection).
MIN_CLIENT_PING_MS = 5_000


@dataclass(frozen=True)
class ConnectionLimits:
    """What one server accepts from the network before any caller is authenticated.

    gRPC's defaults leave a TCP connection that never completes its TLS handshake open for 120 s
    and put no bound on the number of connections, so anyone who can reach the port can hold a
    descriptor each (party.toml ``[limits]``, docs/distributed.md "Connection limits").
    """

    handshake_seconds: float = 10.0  # TLS handshake (and HTTP/2 preface) deadline
    max_connections: int = 256  # open connections; more are closed as soon as they are accepted
    idle_seconds: float = 300.0  # a connection without calls this long is closed (GOAWAY)

    def options(self) -> list[tuple[str, int]]:
        """The gRPC core channel arguments for these limits (verified in
        tests/distributed/test_connection_limits.py)."""
        return [
            ("grpc.server_handshake_timeout_ms", _ms(self.handshake_seconds)),
            ("grpc.max_allowed_incoming_connections", self.max_connections),
            ("grpc.max_connection_idle_ms", _ms(self.idle_seconds)),
            ("grpc.max_concurrent_streams", MAX_STREAMS_PER_CONNECTION),
            ("grpc.keepalive_time_ms", KEEPALIVE_MS),
            ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_recv_ping_interval_without_data_ms", MIN_CLIENT_PING_MS),
        ]


DEFAULT_LIMITS = ConnectionLimits()


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))
