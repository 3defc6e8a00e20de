"""``fedanon party serve``: load the private table once, then serve sessions until stopped.

Start-up problems (unreadable table or certificate, port in use) are reported as one line before
anything listens. SIGTERM and SIGINT stop the server gracefully: the current call may finish
within a short grace period, then the port is released.
"""

from __future__ import annotations

import logging
import signal
import threading

import grpc
from cryptography import x509
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from crypto.identity import load_identity_files
from fedanon.errors import FedanonError
from fedanon.table_io import read_table
from fedanon.taxonomy.loader import load_taxonomy
from fedanon.transport import make_channel, make_server
from party.config import PartyConfig
from party.servicer import PartyServicer
from protos import fedanon_v1_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

SERVICE_NAME = "fedanon.v1.Party"


def build_server(config: PartyConfig) -> tuple[grpc.Server, int, PartyServicer]:
    """A ready (not yet started) server for `config`, with the standard health service."""
    table = read_table(config.data, config.delimiter)
    taxonomy = load_taxonomy(config.taxonomy, data_columns=list(table.columns))
    next_stub = None
    if config.next_hop is not None:
        hop = config.next_hop
        channel = make_channel(hop.address, hop.name, config.tls)
        stub = pb_grpc.PartyStub(channel)
        next_stub = lambda: stub  # noqa: E731  (one channel, reconnecting on its own)
    identity = ca = None
    if config.tls is not None:
        identity = load_identity_files(config.tls.cert, config.tls.key)
        if identity.name != config.name:
            raise FedanonError(f"{config.tls.cert} names '{identity.name}', but this party is "
                               f"configured as '{config.name}'")
        ca = x509.load_pem_x509_certificate(config.tls.ca.read_bytes())
    servicer = PartyServicer(config, table, taxonomy, next_stub, identity, ca)
    try:
        server, port = make_server(config.listen, config.tls)
    except RuntimeError as exc:
        raise FedanonError(f"cannot listen on {config.listen}: {exc} (port in use?)") from exc
    if port == 0:
        raise FedanonError(f"cannot listen on {config.listen} (port in use?)")
    pb_grpc.add_PartyServicer_to_server(servicer, server)
    health_servicer = health.HealthServicer()
    health_servicer.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
    health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    return server, port, servicer


def serve(config: PartyConfig, grace_seconds: float = 5.0) -> None:
    """Run the daemon until SIGTERM/SIGINT."""
    server, port, _ = build_server(config)
    server.start()
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("signal %d: stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    mode = "mutual TLS" if config.tls else "INSECURE (no TLS)"
    print(f"party {config.name} listening on port {port} ({mode})", flush=True)
    stop.wait()
    server.stop(grace_seconds).wait()
    print(f"party {config.name} stopped", flush=True)
