"""An in-process vertical-DRBT federation whose wire traffic and secret matrices are recorded.

Design
------
The privacy claims of vertical DRBT are about what crosses the wire, so the recorder sits on the
wire ends and not inside the protocol code:

* **Every party daemon is the production one**, built by :func:`fedanon.party.daemon.build_server`
  from a real ``party.toml`` (real table loading, real servicer, mutual TLS, health service), but
  in this test process (tests/harness/inprocess.py), with the recorders of tests/harness/wire.py
  on its wire ends: every call a party serves is kept with the caller's certificate name, the
  request and the reply. In vertical DRBT the parties talk to the leader only, so these records
  hold every protocol message in both directions (:func:`protocol` picks the DRBT calls).
* The party's next-hop channel (used by LKC's ring, never by DRBT) records every call made on it
  (``log.calls_made``), so a test can assert that no party ever talks to another party during a
  DRBT session.
* **Ground truth** needs two secrets that never leave a party: its raw block and its matrix R.
  :func:`record_projections` wraps :meth:`DRBTSession.project` (to learn which party is
  projecting, a thread-local) and ``fedanon.algorithms.drbt.projection.random_matrix`` (the
  function ``project_block`` calls to draw R) to keep a copy of every R drawn. This is only
  possible because the parties run in this process; the copies are the oracle, never a message.

Patching module attributes with ``monkeypatch`` (which raises on a missing attribute) keeps the
daemons identical to the production ones and makes a rename fail loudly instead of silently
recording nothing.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import fedanon.algorithms.drbt.projection
import fedanon.party.handlers.drbt_session
from fedanon.federation.config import Hop
from fedanon.federation.tls import TLSFiles
from tests.harness.inprocess import inprocess_parties
from tests.harness.wire import Received, ServedRecorder, WireLog, recording_channel_factory

PROTOCOL_METHODS = {"OpenSession", "Ids", "Project", "Assign", "End"}


# ------------------------------------------------------------------------------ data helpers
def clustered_table(
    m: int = 300,
    d: int = 12,
    clusters: int = 3,
    seed: int = 0,
    gap: float = 8.0,
    id_column: str = "pid",
) -> tuple[pd.DataFrame, np.ndarray]:
    """m x d Gaussian blobs (unit noise) whose centres are >= `gap` apart in *every* attribute.

    Separation in every attribute keeps the clusters apart after any projection of a party's
    block: with random centres that only differ in a few attributes, a 2 -> 1 projection
    merges two clusters in about one run in five. Simulated on 1,500 tables x 1..4 parties
    (6,000 projections), m = 300, d = 12 never gave an F-measure below 1.0 against the truth.
    Returns the table (string ids plus a0..a{d-1}) and the true cluster labels.
    """
    rng = np.random.default_rng(seed)
    centres = np.empty((clusters, d))
    for j in range(d):
        while True:
            levels = rng.uniform(-4 * gap, 4 * gap, size=clusters)
            gaps = np.abs(np.subtract.outer(levels, levels))[np.triu_indices(clusters, 1)]
            if gaps.size == 0 or gaps.min() >= gap:
                break
        centres[:, j] = levels
    labels = np.arange(m) % clusters
    values = centres[labels] + rng.normal(0.0, 1.0, size=(m, d))
    table = pd.DataFrame(values, columns=[f"a{j}" for j in range(d)])
    table.insert(0, id_column, [f"P{i:05d}" for i in range(m)])
    return table, labels


def zscore_population(block: np.ndarray) -> np.ndarray:
    """The spec's z-score, written independently of fedanon: (x - mean) / std, ddof = 0."""
    block = np.asarray(block, dtype=float)
    return (block - block.mean(axis=0)) / block.std(axis=0)


def default_k(d: int) -> int:
    return math.ceil(d / 2)


# ------------------------------------------------------------------------------ wire views
def protocol(log: WireLog, party: str | None = None, method: str | None = None) -> list[Received]:
    """The DRBT protocol calls `party` served (health checks left out), in arrival order."""
    return [
        c for c in log.of(role=party, method=method, kind="request") if c.method in PROTOCOL_METHODS
    ]


# ------------------------------------------------------------------------------ secret oracle
@dataclass(frozen=True)
class Projection:
    """What one party computed in Project (kept by the test only)."""

    attributes: tuple[str, ...]
    matrix: np.ndarray  # R, d_i x k_i
    block: np.ndarray  # the m x k_i result sent to the leader


@dataclass
class Projections:
    items: list[Projection] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def by_attributes(self) -> dict[tuple[str, ...], Projection]:
        with self.lock:
            return {p.attributes: p for p in self.items}


def record_projections(monkeypatch: pytest.MonkeyPatch) -> Projections:
    """Keep a copy of every party's secret matrix R and projected block (in-process only)."""
    store = Projections()
    local = threading.local()
    original_matrix = fedanon.algorithms.drbt.projection.random_matrix
    original_project = fedanon.party.handlers.drbt_session.DRBTSession.project

    def random_matrix(d: int, k: int, kind: str, rng: np.random.Generator) -> np.ndarray:
        matrix = original_matrix(d, k, kind, rng)
        local.matrices.append(matrix.copy())
        return matrix

    def project(self: fedanon.party.handlers.drbt_session.DRBTSession) -> np.ndarray:
        local.matrices = []
        block = original_project(self)
        assert len(local.matrices) <= 1, "Project drew more than one matrix"
        matrix = local.matrices[0] if local.matrices else np.empty((0, 0))
        with store.lock:
            store.items.append(
                Projection(tuple(self.attributes), matrix, np.array(block, copy=True))
            )
        return block

    monkeypatch.setattr(fedanon.algorithms.drbt.projection, "random_matrix", random_matrix)
    monkeypatch.setattr(fedanon.party.handlers.drbt_session.DRBTSession, "project", project)
    return store


# ------------------------------------------------------------------------------ federation
@dataclass
class InProcessFederation:
    """Recorded in-process party servers: what `fedanon.leader.sim.federation` yields, plus logs."""

    workdir: Path
    hops: list[Hop]
    leader_tls: TLSFiles | None
    log: WireLog
    projections: Projections
    servicers: dict[str, Any]
    relay_listen: str | None = None  # in-process servers are dialled directly

    def output_dir(self, name: str) -> Path:
        return self.workdir / f"{name}-out"


@contextlib.contextmanager
def inprocess_federation(
    parts: list[pd.DataFrame], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[InProcessFederation]:
    """One recorded in-process party server per part (mutual TLS, names hospital-1..n)."""
    log = WireLog()
    projections = record_projections(monkeypatch)
    with inprocess_parties(
        parts,
        workdir,
        monkeypatch,
        ca_name="fedanon drbt test CA",
        server_interceptor=lambda name: ServedRecorder(name, log),
        hop_channel_factory=lambda name: recording_channel_factory(name, log),
    ) as started:
        yield InProcessFederation(
            workdir, started.hops, started.leader_tls, log, projections, started.servicers
        )
