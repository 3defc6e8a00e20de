"""An in-process federation that records every message each role receives (leakage tests).

Design
------
The leakage requirement is about what crosses the wire, so the recorder sits on the wire ends,
not inside the protocol code:

* **Party side, requests** - every party daemon is built by the real
  :func:`party.daemon.build_server` (real config file, real table loading, real servicer, real
  next-hop channel, health service), in this test process. The only substitution is the
  ``make_server`` that ``build_server`` calls: ours is ``fedanon.transport.make_server`` with a
  :class:`RecordingServerInterceptor` passed to ``grpc.server``. The interceptor wraps each
  unary handler, so it sees the deserialized request together with the caller's name taken from
  the mutual-TLS certificate (the same :func:`fedanon.transport.peer_name` the servicer
  authorizes with). Health checks are recorded too but are not protocol messages.
* **Party side, replies** - in the ring a party also *receives* its successor's reply (the masked
  total of the secure sum, the stripped union batch). ``build_server`` creates the next-hop channel
  with ``make_channel``; ours wraps the real channel with ``grpc.intercept_channel`` and a
  :class:`RecordingClientInterceptor`.
* **Leader side** - the leader's session creates its channels with ``leader.run.make_channel``; the
  test patches it the same way, so every reply the leader receives is recorded.
* **Ground truth** - to decide whether a message is masked, the test must know the plain values.
  :func:`record_contributions` wraps ``PartySession.contribution`` (the party's local statistics
  vector of an iteration) and stores a copy; that is the oracle, never a message.

Patching module attributes (``party.daemon.make_server``/``make_channel``,
``leader.run.make_channel``) instead of copying ``build_server`` keeps the daemons under test
identical to the production ones; if those names change the patch fails loudly (``monkeypatch``
raises on a missing attribute) rather than silently recording nothing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pandas as pd
import pytest
from google.protobuf.message import Message

import party.daemon
import party.session
from fedanon.tls import TLSFiles
from fedanon.transport import MAX_MESSAGE_BYTES, make_channel, peer_name
from leader.sim import LEADER_NAME, free_ports, issue_federation_certificates
from party.config import Hop, PartyConfig

_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]


@dataclass(frozen=True)
class Received:
    """One message received by `role`: a request it served or a reply to a call it made."""

    role: str  # "leader" or a party name
    method: str  # short RPC name, e.g. "Sum"
    kind: str  # "request" (served) or "reply" (to our own call)
    peer: str | None  # the authenticated caller of a request, or the callee of a reply
    message: Message


@dataclass
class MessageLog:
    """Thread-safe list of everything received (server threads append concurrently)."""

    items: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, item: Received) -> None:
        with self.lock:
            self.items.append(item)

    def of(self, role: str | None = None, method: str | None = None,
           kind: str | None = None) -> list[Received]:
        with self.lock:
            return [r for r in self.items
                    if (role is None or r.role == role)
                    and (method is None or r.method == method)
                    and (kind is None or r.kind == kind)]


def _short(method: str) -> str:
    return method.rsplit("/", 1)[-1]


class RecordingServerInterceptor(grpc.ServerInterceptor):
    """Records each unary request a party serves, with the caller's certificate name."""

    def __init__(self, role: str, log: MessageLog) -> None:
        self.role = role
        self.log = log

    def intercept_service(self, continuation: Callable, handler_call_details: Any) -> Any:
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary
        method = _short(handler_call_details.method)

        def behaviour(request: Message, context: grpc.ServicerContext) -> Any:
            self.log.add(Received(self.role, method, "request", peer_name(context), request))
            return inner(request, context)

        return grpc.unary_unary_rpc_method_handler(
            behaviour,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


class RecordingClientInterceptor(grpc.UnaryUnaryClientInterceptor):
    """Records each successful reply `role` receives from `peer` on one channel."""

    def __init__(self, role: str, peer: str, log: MessageLog) -> None:
        self.role = role
        self.peer = peer
        self.log = log

    def intercept_unary_unary(self, continuation: Callable, client_call_details: Any,
                              request: Message) -> Any:
        outcome = continuation(client_call_details, request)
        with contextlib.suppress(grpc.RpcError):
            self.log.add(Received(self.role, _short(client_call_details.method), "reply",
                                  self.peer, outcome.result()))
        return outcome


def recording_channel_factory(role: str, log: MessageLog) -> Callable[..., grpc.Channel]:
    """A drop-in ``make_channel`` whose channels record every reply `role` receives."""

    def factory(address: str, expected_name: str, tls: TLSFiles | None) -> grpc.Channel:
        channel = make_channel(address, expected_name, tls)
        return grpc.intercept_channel(channel,
                                      RecordingClientInterceptor(role, expected_name, log))

    return factory


def recording_server_factory(role: str, log: MessageLog) -> Callable[..., tuple[grpc.Server, int]]:
    """A drop-in ``make_server`` (same credentials as fedanon.transport) plus the recorder."""

    def factory(listen: str, tls: TLSFiles | None,
                max_workers: int = 8) -> tuple[grpc.Server, int]:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers),
                             options=_OPTIONS,
                             interceptors=[RecordingServerInterceptor(role, log)])
        if tls is None:
            return server, server.add_insecure_port(listen)
        credentials = grpc.ssl_server_credentials(
            [(tls.key.read_bytes(), tls.cert.read_bytes())],
            root_certificates=tls.ca.read_bytes(),
            require_client_auth=True,
        )
        return server, server.add_secure_port(listen, credentials)

    return factory


@dataclass
class Contributions:
    """Ground truth: each party's local statistics vector per iteration (the test's oracle)."""

    vectors: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, name: str, iteration: int) -> np.ndarray:
        return self.vectors[(name, iteration)]


def record_contributions(monkeypatch: pytest.MonkeyPatch) -> Contributions:
    """Wrap ``PartySession.contribution`` to keep a copy of every local vector it returns."""
    store = Contributions()
    original = party.session.PartySession.contribution

    def contribution(self: party.session.PartySession, request: Any) -> np.ndarray:
        iteration = int(request.ref.iteration)
        stats = original(self, request)
        with store.lock:
            store.vectors[(self.ring[self.position], iteration)] = \
                np.asarray(stats).astype(np.uint64, copy=True)
        return stats

    monkeypatch.setattr(party.session.PartySession, "contribution", contribution)
    return store


@dataclass
class RecordingFederation:
    """In-process daemons plus everything recorded while they ran."""

    hops: list[Hop]
    leader_tls: TLSFiles
    cert_dir: Path
    log: MessageLog
    contributions: Contributions
    tables: dict[str, pd.DataFrame]


def write_party_config(path: Path, name: str, port: int, data: Path, taxonomy: Path,
                       next_hop: Hop | None, cert_dir: Path, rpc_seconds: float = 30.0) -> None:
    """A ``party.toml`` in the documented format (read back by ``PartyConfig.load``)."""
    lines = [f'name = "{name}"', f'listen = "127.0.0.1:{port}"', f'data = "{data}"',
             f'taxonomy = "{taxonomy}"', f'leader = "{LEADER_NAME}"']
    if next_hop is not None:
        lines += ["[next_hop]", f'name = "{next_hop.name}"', f'address = "{next_hop.address}"']
    lines += ["[tls]", f'ca = "{cert_dir / "ca.crt"}"', f'cert = "{cert_dir / (name + ".crt")}"',
              f'key = "{cert_dir / (name + ".key")}"',
              "[timeouts]", f"rpc_seconds = {rpc_seconds}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@contextlib.contextmanager
def recording_federation(parts: list[pd.DataFrame], taxonomy: Path, workdir: Path,
                         monkeypatch: pytest.MonkeyPatch,
                         taxonomy_of: dict[int, Path] | None = None,
                         ) -> Iterator[RecordingFederation]:
    """Start one recorded in-process daemon per part (mutual TLS); record the leader too.

    `taxonomy_of` gives some parties (by ring index) another taxonomy file than `taxonomy`.
    The leader's recorder stays patched in until the test's ``monkeypatch`` is undone, so every
    ``run_job`` inside the ``with`` block is recorded; servers are stopped on exit.
    """
    log = MessageLog()
    contributions = record_contributions(monkeypatch)
    names = [f"hospital-{i + 1}" for i in range(len(parts))]
    cert_dir = workdir / "certs"
    issue_federation_certificates(cert_dir, names, "fedanon recorded federation CA")
    ports = free_ports(len(parts))
    hops = [Hop(n, f"127.0.0.1:{p}") for n, p in zip(names, ports, strict=True)]
    servers: list[grpc.Server] = []
    try:
        for i, (name, part) in enumerate(zip(names, parts, strict=True)):
            data = workdir / f"{name}.csv"
            part.to_csv(data, index=False)
            config_path = workdir / f"{name}.toml"
            own = (taxonomy_of or {}).get(i, taxonomy)
            write_party_config(config_path, name, ports[i], data, own.resolve(),
                               hops[i + 1] if i + 1 < len(hops) else None, cert_dir)
            with monkeypatch.context() as build:
                build.setattr(party.daemon, "make_server", recording_server_factory(name, log))
                build.setattr(party.daemon, "make_channel", recording_channel_factory(name, log))
                server, _port, _servicer = party.daemon.build_server(
                    PartyConfig.load(config_path))
            server.start()
            servers.append(server)
        import leader.run

        monkeypatch.setattr(leader.run, "make_channel",
                            recording_channel_factory(LEADER_NAME, log))
        tls = TLSFiles(cert_dir / "ca.crt", cert_dir / f"{LEADER_NAME}.crt",
                       cert_dir / f"{LEADER_NAME}.key")
        yield RecordingFederation(hops, tls, cert_dir, log, contributions,
                                  dict(zip(names, parts, strict=True)))
    finally:
        for server in servers:
            server.stop(None)
