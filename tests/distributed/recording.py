"""An in-process LKC federation whose wire traffic is recorded, with the parties' plain vectors.

The daemons are the production ones started in this test process (tests/harness/inprocess.py);
the recorders on their wire ends and on the leader's channels are tests/harness/wire.py's (one
recorder for every view test). What is LKC-specific lives here:

* **Leader side** - the leader's session creates its channels with
  ``fedanon.leader.session.make_channel``; the test patches it with the recording factory, so
  every reply the leader receives is recorded.
* **Ground truth** - to decide whether a message is masked, the test must know the plain values.
  :func:`record_contributions` wraps ``LKCSession.contribution`` (the party's local statistics
  vector of an iteration) and stores a copy; that is the oracle, never a message.

Patching module attributes (``fedanon.leader.session.make_channel``) instead of copying the
session keeps the code under test identical to the production one; ``monkeypatch`` raises on a
missing attribute, so a rename fails loudly rather than silently recording nothing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import fedanon.party.daemon
import fedanon.party.handlers.lkc_session
from fedanon.federation.config import Hop
from fedanon.federation.tls import TLSFiles
from fedanon.leader.sim import LEADER_NAME
from tests.harness.inprocess import inprocess_parties
from tests.harness.wire import ServedRecorder, WireLog, recording_channel_factory


@dataclass
class Contributions:
    """Ground truth: each party's local statistics vector per iteration (the test's oracle)."""

    vectors: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The same by (party, attempt, iteration): a rerun's iterations start again at 0.
    by_attempt: dict[tuple[str, int, int], np.ndarray] = field(default_factory=dict)

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
            vector = np.asarray(stats).astype(np.uint64, copy=True)
            store.vectors[(self.ring[self.position], iteration)] = vector
            store.by_attempt[(self.ring[self.position], self.attempt, iteration)] = vector
        return stats

    monkeypatch.setattr(fedanon.party.handlers.lkc_session.LKCSession, "contribution", contribution)
    return store


@dataclass
class RecordingFederation:
    """In-process daemons plus everything recorded while they ran."""

    hops: list[Hop]
    leader_tls: TLSFiles
    cert_dir: Path
    log: WireLog
    contributions: Contributions
    tables: dict[str, pd.DataFrame]
    servicers: dict[str, Any]  # the parties' production servicers, by name
    servers: dict[str, Any]  # their gRPC servers, by name


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
    log = WireLog()
    contributions = record_contributions(monkeypatch)

    with inprocess_parties(
        parts,
        workdir,
        monkeypatch,
        ca_name="fedanon recorded federation CA",
        server_interceptor=lambda name: ServedRecorder(name, log),
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
            started.servers,
        )
