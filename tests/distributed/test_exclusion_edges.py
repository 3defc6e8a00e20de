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
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pandas as pd
import pytest

from fedanon.algorithms.tds.engine import StepInfo
from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_channel
from fedanon.leader.exclusion import Attempt
from fedanon.leader.federation import PartyFailure
from fedanon.leader.kinds.lkc import run_lkc
from fedanon.leader.ring import open_ring
from fedanon.leader.session import Session
from fedanon.leader.sim import Daemon, Federation, federation, split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from tests.distributed.conftest import (
    Dataset,
    hospital_dataset,
    make_job,
    party_processes,
    read_release,
    status,
    wait_until_stopped,
)
from tests.distributed.test_exclusion import _assert_lkc
from tests.harness.wait import wait_until

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
    replies: list[pb.StatusReply] = []

    def idle() -> bool:
        replies.append(status(fed, index))
        return not replies[-1].session_id

    wait_until(idle, WAIT, interval=0.1)
    return replies[-1]


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
    # and its abort was given up with the session: no thread of it is left behind
    assert [t.name for t in threading.enumerate() if t.name.startswith("farewell-")] == []
    _assert_lkc(read_release(out), spec)


class FreezeAtSwitch:
    """`on_step` kills daemon #`killed` after iteration 2 (it drops out for good); `on_phase`
    freezes daemon #`frozen` when the leader announces the rerun, so that the next message it
    gets is the leader's ``Rerun``."""

    def __init__(self, fed: Federation, killed: int, frozen: int) -> None:
        self.fed, self.killed, self.frozen = fed, killed, frozen
        self.lines: list[str] = []
        self.fired: list[str] = []

    def on_step(self, step: StepInfo) -> None:
        if not self.fired and step.iteration == 2:
            self.fired.append("killed")
            self.fed.stop(self.fed.daemons[self.killed], signal.SIGKILL)

    def on_phase(self, line: str) -> None:
        self.lines.append(line)
        if self.fired == ["killed"] and line.startswith("exclusion: "):
            self.fired.append("frozen")
            _freeze(self.fed.daemons[self.frozen])

    def resume(self) -> None:
        if "frozen" in self.fired:
            _resume(self.fed.daemons[self.frozen])


def test_a_survivor_frozen_at_the_rerun_switch_is_excluded_in_turn(
    data: Dataset, tmp_path: Path
) -> None:
    """Five parties: hospital-4 killed after iteration 2, hospital-2 frozen as the leader sends
    the ``Rerun`` to attempt 2: the switch's deadline names it, the probe finds it silent, and
    the job goes on as attempt 3 among the other three (hospital-2 told in the background);
    their release passes the checker on their records, the report names both excluded."""
    spec = data.spec(L=2, K=8, C="0.6")
    parts = split_table(data.table, 5, "random", seed=3)
    out = tmp_path / "out.csv"
    with _federation(data, tmp_path, 5) as fed:
        faults = FreezeAtSwitch(fed, killed=3, frozen=1)
        job = make_job(fed.hops, fed.leader_tls, data, spec, out, rpc_seconds=PHASE, **RERUN)
        try:
            report = run_lkc(job, on_step=faults.on_step, on_phase=faults.on_phase)
        finally:
            faults.resume()
    assert party_processes(str(tmp_path)) == []
    assert faults.fired == ["killed", "frozen"]
    assert report["excluded"] == ["hospital-4", "hospital-2"] and report["attempts"] == 3
    assert report["parties"] == ["hospital-1", "hospital-3", "hospital-5"]
    second = [line for line in faults.lines if line.startswith("exclusion: hospital-2 ")]
    assert len(second) == 1 and "(rerun: party hospital-2: " in second[0]
    remaining = pd.concat([parts[i] for i in (0, 2, 4)], ignore_index=True)
    release = read_release(out)
    assert len(release) == len(remaining)
    _assert_lkc(release, spec)


def test_a_survivor_frozen_at_the_switch_below_three_fails_the_job_in_one_line(
    data: Dataset, tmp_path: Path
) -> None:
    """Four parties: hospital-4 killed, then hospital-2 frozen at the ``Rerun``: excluding it
    too would leave two, which no rerun allows; the job fails in one line naming it, the
    switch and the reason, writes nothing, and leaves no daemon behind."""
    spec = data.spec(L=2, K=8, C="0.6")
    out = tmp_path / "out.csv"
    with _federation(data, tmp_path, 4) as fed:
        faults = FreezeAtSwitch(fed, killed=3, frozen=1)
        job = make_job(fed.hops, fed.leader_tls, data, spec, out, rpc_seconds=PHASE, **RERUN)
        try:
            with pytest.raises(PartyFailure) as failure:
                run_lkc(job, on_step=faults.on_step, on_phase=faults.on_phase)
        finally:
            faults.resume()
    assert party_processes(str(tmp_path)) == []
    assert faults.fired == ["killed", "frozen"]
    message = str(failure.value)
    assert "\n" not in message
    assert message.startswith("rerun: party hospital-2: ")
    assert message.endswith(
        "(no rerun without hospital-2: 2 parties would remain, a rerun needs 3)"
    )
    assert not out.exists()


def test_an_end_of_an_earlier_attempt_is_stale_and_the_party_left_out_is_told(
    four: Federation, data: Dataset, tmp_path: Path
) -> None:
    """The leader switches the open session to attempt 1 without hospital-3 (which answers):
    hospital-3 gets the abort at once and is idle, naming its exclusion; a survivor refuses
    an abort of attempt 0 (stale) in one line and keeps its session, which a non-leader
    caller cannot end either."""
    spec = data.spec(L=2, K=8, C="0.6")
    job = make_job(four.hops, four.leader_tls, data, spec, tmp_path / "o.csv", **RERUN)
    request = pb.OpenSessionRequest(lkc=lkc_job_to_proto(spec))
    with Session(job) as session:
        open_ring(session, spec.fingerprint_items(spec.schema(data.taxonomy)), request, "pairwise")
        first = session.ref()
        survivors = [hop for hop in four.hops if hop.name != "hospital-3"]
        Attempt(survivors, ["hospital-3"], 2, True).switch(session)
        told = _wait_idle(four, 2)
        assert told.session_id == "" and told.last_error.endswith(
            "aborted: excluded: the session goes on as attempt 1 without this party"
        )
        stale = pb.EndRequest(ref=first, abort=True, reason="an old attempt's abort")
        with pytest.raises(grpc.RpcError) as refused:
            session.stubs["hospital-1"].End(stale, timeout=30)
        detail = refused.value.details() or ""
        assert detail == (
            f"party hospital-1: end of session {first.session_id[:12]}: attempt 0 is stale "
            "(the session is at attempt 1)"
        )
        kept = status(four, 0)
        assert kept.session_id == session.session_id and kept.attempt == 1
        assert "aborted" not in kept.last_error
        # hospital-2's certificate (a party, not the leader) may not end hospital-1's session
        cert_dir = four.cert_dir
        tls = TLSFiles(
            cert_dir / "ca.crt", cert_dir / "hospital-2.crt", cert_dir / "hospital-2.key"
        )
        channel = make_channel(four.daemons[0].address, "hospital-1", tls)
        try:
            with pytest.raises(grpc.RpcError) as denied:
                pb_grpc.PartyStub(channel).End(
                    pb.EndRequest(ref=session.ref(), abort=True), timeout=30
                )
            assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        finally:
            channel.close()
        assert status(four, 0).session_id == session.session_id
