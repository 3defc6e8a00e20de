"""The edges of an exclusion rerun (#28, h-abort): the party left out, a party frozen at the
switch.

Real daemons over mutual TLS, every party opted in (``allow_exclusion = true``), the pairwise
sum and the shuffle union. A party is frozen (SIGSTOP) from the leader's ``on_step`` callback,
which runs in the leader's thread right after a secure sum: the next message meets the frozen
party, deterministically.

* A party left out of a rerun is told (a best-effort abort, in the background): frozen past
  the phase deadline, excluded, and resumed while the rerun runs, it ends its session at once,
  deletes its sealed state, refuses a late message of the session naming why, and serves the
  next job without waiting for its lease.
* A survivor frozen as the leader sends ``Rerun``: the switch's deadline names it, and it is
  excluded in turn where at least 3 parties remain (attempt 3; the release passes the checker on
  the remaining parties' records); where its exclusion would leave 2, the job fails in one
  line naming it and writes nothing.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pandas as pd
import pytest

from fedanon.algorithms.tds.engine import StepInfo
from fedanon.federation.transport import make_channel
from fedanon.leader import exclusion
from fedanon.leader.federation import PartyFailure
from fedanon.leader.kinds.lkc import run_lkc
from fedanon.leader.sim import Daemon, Federation, federation, split_table
from fedanon.models.lkc import check_lkc
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from tests.distributed.conftest import (
    Dataset,
    hospital_dataset,
    make_job,
    read_release,
    status,
    wait_until_stopped,
)

RERUN = {"sum_mode": "pairwise", "union_mode": "shuffle"}
ALLOW = "allow_exclusion = true"
# Long enough that a party left out still holds its session when the next job comes (what the
# abort changes), and that the leader's abort is still being tried when it resumes.
LEASE = 60.0
PHASE = 5.0  # the job's rpc_seconds: the deadline that catches a frozen party
WAIT = 60.0  # the most a test waits for a party's state to change (a loaded machine)


@pytest.fixture(scope="module")
def data() -> Dataset:
    return hospital_dataset(1600, seed=11)


def _federation(data: Dataset, tmp_path: Path, count: int) -> Any:
    return federation(
        split_table(data.table, count, "random", seed=3),
        data.taxonomy_path,
        lease_seconds=LEASE,
        policy=ALLOW,
        workdir=tmp_path / "fed",
    )


@pytest.fixture
def four(data: Dataset, tmp_path: Path) -> Iterator[Federation]:
    with _federation(data, tmp_path, 4) as fed:
        yield fed


def _sealed(daemon: Daemon) -> Path:
    """The daemon's sealed session file (party/session_store.py), in its state_dir."""
    return daemon.config.parent / f"{daemon.name}-state" / "session.sealed"


def _freeze(daemon: Daemon) -> None:
    assert daemon.process is not None
    daemon.process.send_signal(signal.SIGSTOP)
    wait_until_stopped(daemon.process.pid)


def _resume(daemon: Daemon) -> None:
    assert daemon.process is not None
    daemon.process.send_signal(signal.SIGCONT)


def _wait_idle(fed: Federation, index: int) -> pb.StatusReply:
    """The daemon's Status once it holds no session (fails after WAIT seconds)."""
    until = time.monotonic() + WAIT
    while True:
        reply = status(fed, index)
        if not reply.session_id or time.monotonic() > until:
            return reply
        time.sleep(0.1)


def _assert_lkc(release: pd.DataFrame, spec: Any) -> None:
    sensitive: dict[str, list[str]] = {}
    for s in spec.sensitive:
        sensitive.setdefault(s.column, []).append(s.value)
    params = spec.params
    verdict = check_lkc(release, spec.qids, sensitive, params.L, params.K, params.C)
    assert verdict.ok, verdict.worst


def _late_sum(daemon: Daemon, fed: Federation, session_id: str) -> str:
    """The daemon's refusal of a message of `session_id` (the leader's certificate)."""
    channel = make_channel(daemon.address, daemon.name, fed.leader_tls)
    try:
        request = pb.SumRequest(ref=pb.SessionRef(session_id=session_id, iteration=3))
        with pytest.raises(grpc.RpcError) as refused:
            pb_grpc.PartyStub(channel).Sum(request, timeout=30)
        return refused.value.details() or ""
    finally:
        channel.close()


def test_a_party_left_out_of_a_rerun_is_told_and_is_free_at_once(
    four: Federation, data: Dataset, tmp_path: Path
) -> None:
    """hospital-3 frozen after iteration 2: excluded at the next sum's deadline; resumed as
    the rerun's first iteration completes, it gets the leader's abort (its session ended, its
    sealed file deleted, before the job ends); afterwards it refuses a late message of the
    session in one line saying it was excluded, and a new job of all four runs at once (its
    60 s lease would otherwise keep it busy)."""
    victim = four.daemons[2]
    spec = data.spec(L=2, K=8, C="0.6")
    seen: dict[str, Any] = {}

    def on_step(step: StepInfo) -> None:
        if "frozen" not in seen and step.iteration == 2:
            assert _sealed(victim).exists()  # sealed at key sharing, as every party's
            seen["frozen"] = step.iteration
            _freeze(victim)
        elif "frozen" in seen and "idle" not in seen:  # the rerun's first completed sum
            _resume(victim)
            seen["idle"] = _wait_idle(four, 2)
            seen["sealed"] = _sealed(victim).exists()

    lines: list[str] = []
    out = tmp_path / "out.csv"
    job = make_job(four.hops, four.leader_tls, data, spec, out, rpc_seconds=PHASE, **RERUN)
    try:
        report = run_lkc(job, on_step=on_step, on_phase=lines.append)
    finally:
        _resume(victim)
    assert report["excluded"] == ["hospital-3"] and report["attempts"] == 2
    assert any(line.startswith("exclusion: hospital-3 dropped out") for line in lines)
    idle = seen["idle"]
    assert idle.session_id == "", "the excluded party still held its session"
    assert "aborted: excluded: the session goes on as attempt 1 without this party" in (
        idle.last_error
    )
    assert seen["sealed"] is False
    _assert_lkc(read_release(out), spec)
    late = _late_sum(victim, four, report["session_id"])
    assert late.startswith("party hospital-3: no open session") and "\n" not in late
    assert "its leader aborted it here: excluded" in late
    # Free at once: a job of all four (the excluded party included) opens and finishes.
    again = make_job(four.hops, four.leader_tls, data, spec, tmp_path / "again.csv", **RERUN)
    assert run_lkc(again)["parties"] == [d.name for d in four.daemons]
    assert not _sealed(victim).exists()


def test_the_abort_of_a_party_left_out_never_holds_the_rerun(
    four: Federation, data: Dataset, tmp_path: Path
) -> None:
    """hospital-3 stays frozen to the end: the rerun finishes without waiting for its abort
    (tried in the background, cancelled when the session closes), well within the party's
    lease, and its release passes the checker."""
    victim = four.daemons[2]
    spec = data.spec(L=2, K=8, C="0.6")
    frozen: list[int] = []

    def on_step(step: StepInfo) -> None:
        if not frozen and step.iteration == 2:
            frozen.append(step.iteration)
            _freeze(victim)

    out = tmp_path / "out.csv"
    job = make_job(four.hops, four.leader_tls, data, spec, out, rpc_seconds=PHASE, **RERUN)
    try:
        began = time.monotonic()
        report = run_lkc(job, on_step=on_step)
        took = time.monotonic() - began
    finally:
        _resume(victim)
    assert report["excluded"] == ["hospital-3"]
    assert took < LEASE  # the job never waited for the frozen party's lease
    _assert_lkc(read_release(out), spec)
