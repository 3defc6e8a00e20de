"""An in-process federation that records every message each role receives (leakage tests).

Design
------
The leakage requirement is about what crosses the wire, so the recorder sits on the wire ends,
not inside the protocol code:

* **Party side, requests** - every party daemon is built by the real
  :func:`fedanon.party.daemon.build_server` (real config file, real table loading, real servicer,
  real
  next-hop channel, health service), in this test process (:mod:`tests.inprocess`). The only
  substitution is the ``make_server`` that ``build_server`` calls: ours is
  ``fedanon.federation.transport.make_server`` with a :class:`RecordingServerInterceptor`. The
  interceptor wraps each unary handler, so it sees the deserialized request together with the
  caller's name taken from the mutual-TLS certificate (the same
  :func:`fedanon.federation.transport.peer_name` the servicer authorizes with). Health checks are
  recorded too but are not protocol messages.
* **Party side, replies** - in the ring a party also *receives* its successor's reply (the masked
  total of the secure sum, the stripped union batch). ``build_server`` creates the next-hop channel
  with ``make_channel``; ours wraps the real channel with ``grpc.intercept_channel`` and a
  :class:`RecordingClientInterceptor`.
* **Leader side** - the leader's session creates its channels with
  ``fedanon.leader.session.make_channel``; the test patches it the same way, so every reply the
  leader receives is recorded.
* **Ground truth** - to decide whether a message is masked, the test must know the plain values.
  :func:`record_contributions` wraps ``LKCSession.contribution`` (the party's local statistics
  vector of an iteration) and stores a copy; that is the oracle, never a message.

Patching module attributes (``fedanon.party.daemon.make_server``/``make_channel``,
``fedanon.leader.session.make_channel``) instead of copying ``build_server`` keeps the daemons
under test identical to the production ones; if those names change the patch fails loudly
(``monkeypatch`` raises on a missing attribute) rather than silently recording nothing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pandas as pd
import pytest
from google.protobuf.message import Message

import fedanon.party.daemon
import fedanon.party.handlers.lkc_session
from fedanon.federation.config import Hop
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_channel, peer_name
from fedanon.leader.sim import LEADER_NAME
from tests.inprocess import UnaryServerRecorder, inprocess_parties, short_method


@dataclass(frozen=True)
class Received:
    """One message received by `role`: a request it served or a reply to a call it made."""

    role: str  # "leader" or a party name
    method: str  # short RPC name, e.g. "Sum"
    kind: str  # "request" (served) or "reply" (to our own call)
    peer: str | None  # the authenticated caller of a request, or the callee of a reply
    message: Any  # a protobuf message whose class follows from `method` and `kind`


@dataclass
class MessageLog:
    """Thread-safe list of everything received (server threads append concurrently)."""

    items: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, item: Received) -> None:
        with self.lock:
            self.items.append(item)

    def of(
        self, role: str | None = None, method: str | None = None, kind: str | None = None
    ) -> list[Received]:
        with self.lock:
            return [
                r
                for r in self.items
                if (role is None or r.role == role)
                and (method is None or r.method == method)
                and (kind is None or r.kind == kind)
            ]


class RecordingServerInterceptor(UnaryServerRecorder):
    """Records each unary request a party serves, with the caller's certificate name."""

    def __init__(self, role: str, log: MessageLog) -> None:
        self.role = role
        self.log = log

    def around(
        self,
        method: str,
        request: Message,
        context: grpc.ServicerContext,
        inner: Callable[[Message, grpc.ServicerContext], Any],
    ) -> Any:
        self.log.add(Received(self.role, method, "request", peer_name(context), request))
        return inner(request, context)


class RecordingClientInterceptor(grpc.UnaryUnaryClientInterceptor):
    """Records each successful reply `role` receives from `peer` on one channel."""

    def __init__(self, role: str, peer: str, log: MessageLog) -> None:
        self.role = role
        self.peer = peer
        self.log = log

    def intercept_unary_unary(
        self, continuation: Callable, client_call_details: Any, request: Message
    ) -> Any:
        outcome = continuation(client_call_details, request)
        with contextlib.suppress(grpc.RpcError):
            self.log.add(
                Received(
                    self.role,
                    short_method(client_call_details.method),
                    "reply",
                    self.peer,
                    outcome.result(),
                )
            )
        return outcome


def recording_channel_factory(role: str, log: MessageLog) -> Callable[..., grpc.Channel]:
    """A drop-in ``make_channel`` whose channels record every reply `role` receives."""

    def factory(address: str, expected_name: str, tls: TLSFiles | None) -> grpc.Channel:
        channel = make_channel(address, expected_name, tls)
        return grpc.intercept_channel(channel, RecordingClientInterceptor(role, expected_name, log))

    return factory


@dataclass
class Contributions:
    """Ground truth: each party's local statistics vector per iteration (the test's oracle)."""

    vectors: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, name: str, iteration: int) -> np.ndarray:
        return self.vectors[(name, iteration)]


def record_contributions(monkeypatch: pytest.MonkeyPatch) -> Contributions:
    """Wrap ``LKCSession.contribution`` to keep a copy of every local vector it returns."""
    store = Contributions()
    original = fedanon.party.handlers.lkc_session.LKCSession.contribution

    def contribution(
        self: fedanon.party.handlers.lkc_session.LKCSession, request: Any
    ) -> np.ndarray:
        iteration = int(request.ref.iteration)
        stats = original(self, request)
        with store.lock:
            store.vectors[(self.ring[self.position], iteration)] = np.asarray(stats).astype(
                np.uint64, copy=True
            )
        return stats

    monkeypatch.setattr(fedanon.party.handlers.lkc_session.LKCSession, "contribution", contribution)
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
    servicers: dict[str, Any]  # the parties' production servicers, by name


@contextlib.contextmanager
def recording_federation(
    parts: list[pd.DataFrame],
    taxonomy: Path,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    taxonomy_of: dict[int, Path] | None = None,
) -> Iterator[RecordingFederation]:
    """Start one recorded in-process daemon per part (mutual TLS); record the leader too.

    `taxonomy_of` gives some parties (by ring index) another taxonomy file than `taxonomy`.
    The leader's recorder stays patched in until the test's ``monkeypatch`` is undone, so every
    ``run_lkc`` inside the ``with`` block is recorded; servers are stopped on exit.
    """
    log = MessageLog()
    contributions = record_contributions(monkeypatch)

    with inprocess_parties(
        parts,
        workdir,
        monkeypatch,
        ca_name="fedanon recorded federation CA",
        server_interceptor=lambda name: RecordingServerInterceptor(name, log),
        hop_channel_factory=lambda name: recording_channel_factory(name, log),
        taxonomy_of=lambda i: (taxonomy_of or {}).get(i, taxonomy),
    ) as started:
        import fedanon.leader.session

        monkeypatch.setattr(
            fedanon.leader.session, "make_channel", recording_channel_factory(LEADER_NAME, log)
        )
        names = [hop.name for hop in started.hops]
        yield RecordingFederation(
            started.hops,
            started.leader_tls,
            started.cert_dir,
            log,
            contributions,
            dict(zip(names, parts, strict=True)),
            started.servicers,
        )
