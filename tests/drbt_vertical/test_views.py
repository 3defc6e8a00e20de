"""View test of vertical DRBT: what a party sees over a whole job does not depend on the other
parties' data beyond the outputs (docs/leakage.md, 'View tests').

A party's view is every message it receives and every reply it sends (in vertical DRBT parties
talk only to the leader, and the recorder sees both directions). The job runs three times on
in-process daemons (:mod:`tests.drbt_vertical.harness`) with the clustering seeded: A and A2 on
the same data (each session draws fresh projection matrices, so the parts of the view equal in
both are the ones not hidden by randomness), and B where every *other* party's attribute values
moved by a small amount that changes neither the common id list nor the clusters (checked).
Every message of the observer's view that is the same in A and A2 must be the same in B.

The leader is not judged here: the joined projection of every party's block is its output.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from google.protobuf.message import Message

from fedanon.leader.kinds.drbt import DRBTLeaderJob, run_drbt
from fedanon.leader.sim import split_columns
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.drbt_vertical.harness import clustered_table, inprocess_federation, protocol
from tests.harness.wire import WireLog

PARTIES = 3
NUDGE = 1e-3  # added to the other parties' values: far below the clusters' separation


def partition(labels: list[int]) -> list[int]:
    """Cluster labels renamed in order of first appearance: k-means numbers its clusters
    arbitrarily (here after a random projection), the partition is what is computed."""
    names: dict[int, int] = {}
    return [names.setdefault(label, len(names)) for label in labels]


def _anonymous(message: Message) -> bytes:
    """The message with its session id blanked (a fresh random id per job) and cluster labels
    as a partition."""
    copy: Any = type(message)()  # fields are read by name, checked against the descriptor
    copy.CopyFrom(message)
    if "ref" in copy.DESCRIPTOR.fields_by_name and copy.HasField("ref"):
        copy.ref.session_id = ""
    if isinstance(copy, pb.AssignRequest):
        copy.clusters[:] = partition(list(copy.clusters))
    return copy.SerializeToString(deterministic=True)


def view(log: WireLog, party: str) -> dict[tuple[str, int, str], bytes]:
    """Everything `party` received and sent, per method and call number."""
    out: dict[tuple[str, int, str], bytes] = {}
    for call in protocol(log, party=party):
        number = sum(key[0] == call.method and key[2] == "received" for key in out)
        out[(call.method, number, "received")] = _anonymous(call.message)
        if call.answer is not None:
            out[(call.method, number, "sent")] = _anonymous(call.answer)
    return out


@dataclass(frozen=True)
class Run:
    log: WireLog
    labels: list[int]
    matrices: dict[tuple[str, ...], np.ndarray]  # each party's secret R (the oracle)


def _run(parts: list[pd.DataFrame], workdir: Path) -> Run:
    labels: list[list[int]] = []
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        inprocess_federation(parts, workdir / "fed", monkeypatch) as fed,
    ):
        run_drbt(
            DRBTLeaderJob(
                parties=fed.hops,
                tls=fed.leader_tls,
                out=workdir / "out.csv",
                id_column="pid",
                send_assignment=True,
                seed=7,
            ),
            on_clusters=lambda ids, found: labels.append([int(x) for x in found]),
        )
        assert not fed.log.calls_made, "a party talked to another party"
    matrices = {key: p.matrix for key, p in fed.projections.by_attributes().items()}
    return Run(fed.log, labels[0], matrices)


def _independent_run(parts: list[pd.DataFrame], workdir: Path, first: Run, observer: int) -> Run:
    """A second run whose observer R differs from `first`'s.

    The parts of the view equal in two runs are taken as the ones randomness does not hide. A
    sparse R has a small discrete support (d_i = 3, k_i = 2: the same R in about 1 run in 180,
    the flake of session 8), and a coinciding R would make the observer's projected block look
    data-determined; so a run that drew the observer's R again is redrawn.
    """
    key = tuple(c for c in parts[observer].columns if c != "pid")
    for attempt in range(4):
        run = _run(parts, workdir / f"try{attempt}")
        if not np.array_equal(run.matrices[key], first.matrices[key]):
            return run
    raise AssertionError("four runs drew the observer's matrix of the first run")


def nudged(parts: list[pd.DataFrame], keep: int) -> list[pd.DataFrame]:
    """Every party's attribute values but `keep`'s moved by NUDGE (ids untouched)."""
    out = []
    for index, part in enumerate(parts):
        if index == keep:
            out.append(part)
            continue
        changed = part.copy()
        attributes = [c for c in part.columns if c != "pid"]
        changed[attributes] = part[attributes] + NUDGE * (1 + np.arange(len(part)))[:, None] % 7
        out.append(changed)
    return out


@pytest.mark.parametrize("observer", range(PARTIES))
def test_drbt_party_view_depends_only_on_the_outputs(tmp_path: Path, observer: int) -> None:
    table, _ = clustered_table(m=240, d=9, seed=3)
    parts = split_columns(table, PARTIES, "pid")
    name = f"hospital-{observer + 1}"
    first = _run(parts, tmp_path / "a")
    again = _independent_run(parts, tmp_path / "a2", first, observer)
    moved = _run(nudged(parts, observer), tmp_path / "b")
    assert partition(first.labels) == partition(again.labels) == partition(moved.labels), (
        "the outputs changed: no view test"
    )
    a, a2, b = view(first.log, name), view(again.log, name), view(moved.log, name)
    stable = {k: v for k, v in a.items() if a2.get(k) == v}
    assert {("Assign", 0, "received"), ("Ids", 0, "received")} <= set(stable)
    differ = [k for k, v in stable.items() if b.get(k) != v]
    assert not differ, f"{name}'s view changes with the other parties' data: {differ}"
    assert set(b) == set(a), "the observer saw other messages"
