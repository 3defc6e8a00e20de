"""``fedanon party serve``: load the private table once, then serve sessions until stopped.

Start-up problems (unreadable table or certificate, a listen address without a usable port, a
port in use - also by another daemon: the port is bound exclusively) are reported as one line
before anything listens. SIGTERM and SIGINT stop the server gracefully: the current call may finish
within a short grace period, then the port is released.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import signal
import threading
import time

import grpc
from cryptography import x509
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from fedanon.algorithms.tds.engines import counting_engine
from fedanon.crypto.errors import CryptoError
from fedanon.crypto.identity import load_identity_files
from fedanon.errors import FedanonError
from fedanon.federation.config import DIE_WITH_PARENT
from fedanon.federation.transport import (
    RECONNECT_OPTIONS,
    listen_port,
    make_channel,
    make_server,
    ready_within,
)
from fedanon.party.config import PartyConfig
from fedanon.party.gate import PartyGate
from fedanon.party.inputs import read_inputs
from fedanon.party.servicer import PartyServicer
from fedanon.party.session_store import holding_state_dir
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

SERVICE_NAME = "fedanon.v1.Party"


def build_servicer(config: PartyConfig) -> PartyServicer:
    """The servicer for `config`: its table read, its certificate checked against its name;
    in direct mode its channel to the next hop (an outbound party's goes through the relay)."""
    inputs = read_inputs(
        config.data,
        config.delimiter,
        config.taxonomy,
        sharded=config.engine.name == "dask",
        digest=config.state_dir is not None and config.tls is not None,  # sessions are sealed
    )
    next_stub = None
    channel: grpc.Channel | None = None
    if config.next_hop is not None and config.transport == "direct":
        hop = config.next_hop
        channel = make_channel(hop.address, hop.name, config.tls, options=RECONNECT_OPTIONS)
        stub = pb_grpc.PartyStub(channel)
        next_stub = lambda: stub  # noqa: E731  (one channel, reconnecting on its own)
    identity = ca = None
    if config.tls is not None:
        identity = load_identity_files(config.tls.cert, config.tls.key)
        if identity.name != config.name:
            raise FedanonError(
                f"{config.tls.cert} names '{identity.name}', but this party is "
                f"configured as '{config.name}'"
            )
        ca = x509.load_pem_x509_certificate(config.tls.ca.read_bytes())
    counting = counting_engine(config.engine)
    servicer = PartyServicer(
        config, inputs.source, inputs.taxonomy, next_stub, identity, ca, counting=counting
    )
    servicer.store.inputs = inputs.digest  # what a sealed session's rejoin must find again
    if channel is not None:  # the servicer's to close; a retry waits until it is ready
        servicer.next_channel = channel
        servicer.next_ready = functools.partial(ready_within, channel)
    return servicer


def build_server(config: PartyConfig) -> tuple[grpc.Server, int, PartyServicer]:
    """A ready (not yet started) server for `config`, with the standard health service."""
    try:
        asked = listen_port(config.listen)
    except ValueError as exc:
        raise FedanonError(str(exc)) from None
    servicer = build_servicer(config)
    try:
        server, port = make_server(
            config.listen,
            config.tls,
            interceptors=[PartyGate(servicer)],
            max_receive_bytes=servicer.max_message_bytes,
            limits=config.connections,
        )
    except RuntimeError:
        servicer.close()  # its next hop's channel: a caller may try again on another port
        raise FedanonError(
            f"cannot listen on {config.listen}: the port is in use (another "
            "daemon?) or the address is not this host's"
        ) from None
    if port != asked:
        servicer.close()
        raise FedanonError(f"cannot listen on {config.listen}: bound port {port} instead")
    pb_grpc.add_PartyServicer_to_server(servicer, server)
    health_servicer = health.HealthServicer()
    health_servicer.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
    health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    return server, port, servicer


def check_next_hop(config: PartyConfig) -> bool:
    """Probe the next hop's health service; with wait_next_hop_seconds > 0 insist on it.

    Parties may start in any order, so by default an unreachable next hop is only a warning
    (sessions will name it if it is still unreachable then).
    """
    hop = config.next_hop
    if hop is None:
        return True
    wait = config.wait_next_hop_seconds
    deadline = time.monotonic() + max(wait, 1.0)
    channel = make_channel(hop.address, hop.name, config.tls)
    try:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                stub.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=1)
                return True
            except grpc.RpcError as exc:
                if time.monotonic() >= deadline:
                    message = (
                        f"next hop {hop.name} at {hop.address} is unreachable "
                        f"({exc.code().name}: {exc.details()})"
                    )
                    if wait > 0:
                        raise FedanonError(message) from None
                    log.warning("%s; sessions will fail until it is up", message)
                    return False
                time.sleep(0.2)
    finally:
        channel.close()


def tie_to_parent() -> None:
    """With ``FEDANON_DIE_WITH_PARENT=<pid>``: receive SIGKILL when that parent dies.

    The daemon asks for it itself, rather than the parent doing it between fork and exec
    (``preexec_fn``): a parent that already holds gRPC channels must not run Python in a forked
    child, where gRPC's fork handlers can fail on its epoll descriptors and kill the child. A
    parent that died before the request is caught by comparing the parent pid afterwards.
    """
    wanted = os.environ.get(DIE_WITH_PARENT)
    if not wanted:
        return
    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if str(os.getppid()) != wanted:
        raise SystemExit(f"fedanon: the process that started this daemon ({wanted}) is gone")


#: How often the main thread looks whether a signal asked it to stop.
STOP_POLL_SECONDS = 0.25


def wait_for(stop: threading.Event) -> None:
    """Wait until `stop` is set, looking every ``STOP_POLL_SECONDS``.

    Python runs signal handlers in the main thread, but the kernel delivers a process signal to
    any thread that can take it: to one of gRPC's when the main thread cannot, as right after a
    SIGCONT while it is still marked stopped. An untimed ``Event.wait`` is then never woken
    and the handler waited for a second signal; a timed wait returns to the interpreter,
    which runs the pending handler.
    """
    while not stop.wait(STOP_POLL_SECONDS):
        pass


def serve(config: PartyConfig, grace_seconds: float = 5.0) -> None:
    """Run the daemon until SIGTERM/SIGINT; in-flight calls get `grace_seconds` to finish."""
    tie_to_parent()
    with holding_state_dir(config.state_dir):
        _serve(config, grace_seconds)


def _serve(config: PartyConfig, grace_seconds: float) -> None:
    """`serve` once the daemon holds its state_dir (released when it stops or fails)."""
    server, port, servicer = build_server(config)
    # Before the server answers its first health check: a SIGTERM from then on (the daemon
    # counts as started) stops it gracefully, even while its workers are still starting.
    stop = stop_on_signals()
    server.start()
    start_workers(servicer)
    mode = "mutual TLS" if config.tls else "INSECURE (no TLS)"
    print(f"party {config.name} listening on port {port} ({mode})", flush=True)
    log.info("%s", config.policy.describe())
    try:
        check_next_hop(config)
    except (FedanonError, CryptoError):
        server.stop(0).wait()
        raise
    wait_for(stop)
    if servicer.session is not None:
        log.warning(
            "stopping during session %s: in-flight calls get %.0f s, then the session is abandoned",
            servicer.session.session_id[:12],
            grace_seconds,
        )
    server.stop(grace_seconds).wait()
    close_workers(servicer)


def stop_on_signals() -> threading.Event:
    """An event SIGTERM and SIGINT set (each logged): both transports' daemons wait on it."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("signal %d: stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop


def start_workers(servicer: PartyServicer) -> None:
    """Start what a daemon runs beside its calls, before any session needs it: the union's
    fork server and the idle-key workers (key pairs for the layered union, made while no one
    waits)."""
    servicer.config.union_parallelism.start()
    servicer.idle_keys.start()


def close_workers(servicer: PartyServicer) -> None:
    """Stop what `start_workers` started, the local counting engine and the next hop's channel;
    say the party stopped (launchers and tests read that line)."""
    servicer.idle_keys.close()
    servicer.close()
    if servicer.counting is not None:
        servicer.counting.close()
    print(f"party {servicer.config.name} stopped", flush=True)
