"""Waiting for a simulated federation's daemons: all at once, within a bound that grows with N.

N daemons started together share the machine's cores, so each takes about N/cores times as long
as one started alone (importing pandas, gRPC and cryptography, reading its table); a fixed
per-daemon deadline therefore fails a 20-party federation on a small machine while every daemon
is still starting. The wait fails early only on what cannot improve - a daemon that exited -
and otherwise keeps going while daemons are alive, up to :func:`startup_seconds`.

The health probe's channel retries its connection every half second at most: gRPC's default
reconnect backoff grows to two minutes, so a channel that was refused while its daemon was
still importing would otherwise notice the listening daemon only tens of seconds later.
"""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_channel

#: The start-up bound of one daemon alone, and what each further daemon adds to it: generous,
#: since a daemon that is alive and still starting is not a failure (tens of seconds per
#: daemon on two busy cores; a daemon that exits ends the wait at once).
STARTUP_BASE_SECONDS = 60.0
STARTUP_PER_DAEMON_SECONDS = 15.0

#: Reconnect backoff of the probe's channel (gRPC's default grows to 120 s).
PROBE_CHANNEL_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 500),
]
#: Deadline of one health check (it waits for the connection, which is slow on busy cores).
PROBE_SECONDS = 5.0


def startup_seconds(daemons: int) -> float:
    """How long `daemons` daemons started at once may take until all are ready."""
    return STARTUP_BASE_SECONDS + STARTUP_PER_DAEMON_SECONDS * max(daemons, 1)


class HealthProbe:
    """One daemon's standard gRPC health service, asked without blocking the caller."""

    def __init__(self, address: str, name: str, tls: TLSFiles | None) -> None:
        self.channel = make_channel(address, name, tls, options=PROBE_CHANNEL_OPTIONS)
        self.stub = health_pb2_grpc.HealthStub(self.channel)
        self.call: grpc.Future | None = None

    def serving(self) -> bool:
        """Whether the last check answered SERVING; starts the next check when none runs."""
        if self.call is None:
            self.call = self.stub.Check.future(
                health_pb2.HealthCheckRequest(service=""),
                timeout=PROBE_SECONDS,
                wait_for_ready=True,
            )
            return False
        if not self.call.done():
            return False
        call, self.call = self.call, None
        try:
            return bool(call.result().status == health_pb2.HealthCheckResponse.SERVING)
        except grpc.RpcError:
            return False

    def close(self) -> None:
        if self.call is not None:
            self.call.cancel()
        self.channel.close()
