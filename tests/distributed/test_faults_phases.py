"""The fault harness: freeze, slow down or kill one party at each phase of a session.

A party stopped with SIGSTOP keeps its TCP connections open and answers nothing; one that
trickles (SIGSTOP/SIGCONT cycles, running 3 ms in every half second) answers, but slowly; a killed
one refuses connections. Whatever the fault and the phase, the leader must end the job within
the phase's deadline (plus the abort and a margin for a loaded machine), with one line naming
the party and the phase, write nothing, and the federation must run the next job at once (a
resumed party whose session's lease lapsed accepts it; a killed one is restarted). Before the
fix a frozen party in the union could hold the leader for twice the union's deadline and a
trickling one past it, chunk by chunk.

The fault fires in the leader's thread right before the phase's first message (for the secure
sum, after iteration 1), so each case is deterministic. Deadlines are short (`RPC_SECONDS`,
`UNION_SECONDS`) to keep the matrix quick, but only from the fault on: until it fires the job
runs with `SLACK_SECONDS`, so a phase before the faulted one, slow on a loaded machine (a
fault-free STRIP in 4 KiB chunks took 4 s under CI's load), cannot end the case in its own
phase. The job's deadlines are read as each phase starts (`live_deadlines`), so the faulted
phase gets the short ones. The shared federation's lease is 5 s.
"""

from __future__ import annotations

import inspect
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import fedanon.leader.federation
import fedanon.leader.union
from fedanon.algorithms.randomization.coding import observed_domain
from fedanon.algorithms.randomization.jobspec import RandomizeSpec
from fedanon.algorithms.tds.engine import StepInfo
from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.federation.chunks import DEFAULT_CHUNK_BYTES
from fedanon.leader.federation import PartyFailure
from fedanon.leader.kinds.lkc import LKCLeaderJob, run_lkc
from fedanon.leader.kinds.randomize import RandomizeLeaderJob, run_randomize
from fedanon.leader.ring_settings import RingSettings
from fedanon.leader.session import Session
from fedanon.leader.sim import Federation
from tests.distributed.conftest import (
    Centralized,
    Dataset,
    assert_same_release,
    centralized,
    make_job,
    party_processes,
    status,
    wait_leases_lapsed,
    wait_until_stopped,
)
from tests.distributed.test_faults import ensure_running

RPC_SECONDS = 3.0
UNION_SECONDS = 4.0
# Every deadline until the fault fires: far beyond any fault-free phase on a loaded machine.
SLACK_SECONDS = 120.0
CHUNK_BYTES = 4096  # many chunks per union phase: a trickling party meets the deadline midway
# What docs/distributed.md (Faults) allows on top of a phase's deadline: a second for the calls'
# own deadline errors to arrive, then at most 3 s to abort at every party.
AFTER_DEADLINE_SECONDS = 1.0 + 3.0
# A loaded machine (two cores, several test runs) may be this late on top of that.
MARGIN_SECONDS = 5.0


def _spec(data: Dataset) -> LKCJobSpec:
    """The job of every run here: a dozen iterations on the shared hospital table."""
    return data.spec(L=3, K=20, C="0.2")


def ring_sum_seconds(parties: int) -> float:
    """A ring sum's deadline (leader/federation.py: +25% per party)."""
    return RPC_SECONDS * (1 + 0.25 * parties)


@dataclass
class Fault:
    """One fault on one daemon: `fire` applies it, `recover` undoes it (restart, SIGCONT)."""

    fed: Federation
    victim: int
    kind: str  # "freeze", "trickle" or "kill"
    job: RingSettings | None = None  # its deadlines become the short ones at `arm`
    fired_at: float | None = None
    _stop_trickle: threading.Event = field(default_factory=threading.Event)
    _trickler: threading.Thread | None = None

    @property
    def name(self) -> str:
        return self.fed.daemons[self.victim].name

    @property
    def pid(self) -> int:
        process = self.fed.daemons[self.victim].process
        assert process is not None
        return process.pid

    def arm(self) -> None:
        """The job's deadlines from now on: the short ones under test. A fault without a
        `job` is one whose job ran under the short deadlines from its start (the
        classification kinds' tests), so there is nothing to shorten."""
        if self.job is not None:
            self.job.rpc_seconds, self.job.union_seconds = RPC_SECONDS, UNION_SECONDS

    def fire(self) -> None:
        if self.fired_at is not None:
            return
        self.arm()
        if self.kind == "kill":
            self.fed.stop(self.fed.daemons[self.victim], signal.SIGKILL)
        elif self.kind == "freeze":
            os.kill(self.pid, signal.SIGSTOP)
            wait_until_stopped(self.pid)
        else:
            os.kill(self.pid, signal.SIGSTOP)
            wait_until_stopped(self.pid)
            self._trickler = threading.Thread(target=self._trickle, args=(self.pid,))
            self._trickler.start()
        self.fired_at = time.monotonic()

    def _trickle(self, pid: int) -> None:
        """Run the party 3 ms in every half second until recovery: it answers a message or
        two each time (a loopback round trip takes about a millisecond), very slowly."""
        while not self._stop_trickle.wait(0.5):
            os.kill(pid, signal.SIGCONT)
            time.sleep(0.003)
            os.kill(pid, signal.SIGSTOP)

    def recover(self) -> None:
        """Undo the fault and wait until the federation accepts a new job."""
        if self.kind == "kill":
            ensure_running(self.fed)
            return
        self._stop_trickle.set()
        if self._trickler is not None:
            self._trickler.join()
        os.kill(self.pid, signal.SIGCONT)
        if self.fired_at is None:
            return
        # The resumed party may still hold the aborted session (it missed the abort while it
        # was stopped, and a heartbeat queued before the stop renews its lease once): a new
        # job may evict it once its lease lapses, which the next job's handshake checks. The
        # party says when (Status: the lease left), however late the renewal came.
        assert not wait_leases_lapsed(self.fed, [self.victim])


# Where each phase's fault fires: a hook installed with monkeypatch, and the phase's deadline.
Hook = Callable[[pytest.MonkeyPatch, Fault], None]


def _before_fan_out(phase: str) -> Hook:
    def install(monkeypatch: pytest.MonkeyPatch, fault: Fault) -> None:
        fan_out = Session.fan_out

        def faulty(self: Session, name: str, call: Any, *rest: Any) -> Any:
            if name == phase:
                fault.fire()
            return fan_out(self, name, call, *rest)

        monkeypatch.setattr(Session, "fan_out", faulty)

    return install


def _before_measure(monkeypatch: pytest.MonkeyPatch, fault: Fault) -> None:
    """The union hands MEASURE the deadline it read when it started: the faulted MEASURE gets
    the job's deadline as it is once the fault fired (the short one)."""
    measure = fedanon.leader.union._measure

    def faulty(*args: Any, **kwargs: Any) -> Any:
        fault.fire()
        assert fault.job is not None
        bound = inspect.signature(measure).bind(*args, **kwargs)
        bound.arguments["rpc_seconds"] = fault.job.rpc_seconds
        return measure(*bound.args, **bound.kwargs)

    monkeypatch.setattr(fedanon.leader.union, "_measure", faulty)


def live_deadlines(monkeypatch: pytest.MonkeyPatch, job: LKCLeaderJob) -> None:
    """The job's deadlines read when each phase starts: the leader takes the union's (and the
    ring sum's) when the union (the ring) starts, before a later fault shortens them."""
    monkeypatch.setattr(
        fedanon.leader.union._Calls,
        "timeout",
        property(lambda _self: job.union_seconds, lambda _self, _value: None),
        raising=False,  # a dataclass field without a default: no class attribute
    )
    for kind in (fedanon.leader.federation.RingSum, fedanon.leader.federation.PairwiseSum):
        total = kind.total

        def live(self: Any, *args: Any, _total: Any = total) -> Any:
            self.rpc_seconds = job.rpc_seconds
            return _total(self, *args)

        monkeypatch.setattr(kind, "total", live)


def _no_hook(monkeypatch: pytest.MonkeyPatch, fault: Fault) -> None:
    """The phase's fault fires from the job's callbacks (see `_callbacks`)."""


@dataclass(frozen=True)
class Phase:
    label: str  # as the leader's error names it
    hook: Hook
    seconds: float


PHASES = {
    "handshake": Phase("handshake", _before_fan_out("handshake"), RPC_SECONDS),
    "key sharing": Phase("key sharing", _before_fan_out("key sharing"), RPC_SECONDS),
    "sum": Phase("secure sum, iteration 2", _no_hook, ring_sum_seconds(3)),
    "measure": Phase("union (measure)", _before_measure, RPC_SECONDS),
    "collect": Phase("union (collect)", _before_fan_out("union (collect)"), UNION_SECONDS),
    "strip": Phase("union (strip)", _no_hook, UNION_SECONDS),
    "fetch": Phase("union (fetch the peeled batch)", _no_hook, UNION_SECONDS),
    "end": Phase("end", _before_fan_out("end"), RPC_SECONDS),
}

slow = pytest.mark.slow
CASES = [
    # (fault, victim index, phase): every phase frozen, the union's phases also killed and
    # slowed; the victims vary (first, middle, last) because the ring treats them differently.
    # freeze-middle-strip waits out a whole phase deadline (about 15 s): slow; the quick subset
    # freezes a party mid-union in test_a_union_phase_ends_within_its_deadline...[collect].
    pytest.param("freeze", 1, "strip", marks=slow, id="freeze-middle-strip"),
    pytest.param("trickle", 1, "collect", id="trickle-middle-collect"),
    pytest.param("kill", 2, "fetch", id="kill-last-fetch"),
    pytest.param("freeze", 2, "handshake", marks=slow, id="freeze-last-handshake"),
    pytest.param("freeze", 0, "key sharing", marks=slow, id="freeze-first-keys"),
    pytest.param("freeze", 1, "sum", marks=slow, id="freeze-middle-sum"),
    pytest.param("freeze", 1, "measure", marks=slow, id="freeze-middle-measure"),
    pytest.param("freeze", 2, "collect", marks=slow, id="freeze-last-collect"),
    pytest.param("freeze", 0, "strip", marks=slow, id="freeze-first-strip"),
    pytest.param("freeze", 2, "fetch", marks=slow, id="freeze-last-fetch"),
    pytest.param("freeze", 0, "end", marks=slow, id="freeze-first-end"),
    pytest.param("trickle", 2, "strip", marks=slow, id="trickle-last-strip"),
    pytest.param("kill", 1, "strip", marks=slow, id="kill-middle-strip"),
    pytest.param("kill", 0, "collect", marks=slow, id="kill-first-collect"),
]


@pytest.fixture(scope="module")
def reference(hospital_data: Dataset) -> Centralized:
    return centralized(hospital_data, _spec(hospital_data))


@pytest.fixture
def fault_of(hospital_federation: Federation) -> Iterator[Callable[[str, int], Fault]]:
    """Make the test's fault; it is undone whatever the outcome."""
    made: list[Fault] = []

    def make(kind: str, victim: int) -> Fault:
        made.append(Fault(hospital_federation, victim, kind))
        return made[-1]

    try:
        yield make
    finally:
        for fault in made:
            fault.recover()
        ensure_running(hospital_federation)


def _callbacks(phase: str, fault: Fault) -> dict[str, Any]:
    """The job's own callbacks where they mark the phase: after iteration 1 (the sum), once
    COLLECT is done (the strip: before the leader takes the strip's deadline), or when the
    leader starts opening the peeled batch (the fetch from the last party). The strip and the
    fetch are one phase with one deadline (leader/union.py), so a fetch case's short deadline
    starts with its fault-free strip."""
    if phase == "sum":

        def on_step(step: StepInfo) -> None:
            if step.iteration >= 1:
                fault.fire()

        return {"on_step": on_step}
    if phase in ("strip", "fetch"):

        def on_phase(text: str) -> None:
            if text.startswith("union: collect: done"):
                fault.fire() if phase == "strip" else fault.arm()
            if phase == "fetch" and text.startswith("union: opening"):
                fault.fire()

        return {"on_phase": on_phase}
    return {}


@pytest.mark.parametrize(("kind", "victim", "phase"), CASES)
def test_fault_at_phase_is_named_within_the_deadline_and_the_next_job_runs(
    kind: str,
    victim: int,
    phase: str,
    hospital_federation: Federation,
    hospital_data: Dataset,
    reference: Centralized,
    fault_of: Callable[[str, int], Fault],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fed = hospital_federation
    fault = fault_of(kind, victim)
    where = PHASES[phase]
    out, report = tmp_path / "release.csv", tmp_path / "report.json"
    callbacks = _callbacks(phase, fault)
    # A fetch case's fault-free strip runs under the short deadline (one phase with the fetch):
    # in whole batches it is a few calls. The fetch itself is one call per chunk either way.
    chunk_bytes = DEFAULT_CHUNK_BYTES if phase == "fetch" else CHUNK_BYTES
    with monkeypatch.context() as patched:
        where.hook(patched, fault)
        with pytest.raises(PartyFailure) as failure:
            _run(fed, hospital_data, out, report, fault, patched, chunk_bytes, **callbacks)
    failed_at = time.monotonic()
    assert fault.fired_at is not None, "the job never reached the phase"
    elapsed = failed_at - fault.fired_at
    message = str(failure.value)
    assert message.startswith(f"{where.label}: party {fault.name}:"), message
    assert "\n" not in message
    limit = where.seconds + AFTER_DEADLINE_SECONDS + MARGIN_SECONDS
    assert elapsed < limit, f"{message!r} took {elapsed:.1f} s (limit {limit:.1f} s)"
    assert not out.exists() and not report.exists()
    assert list(tmp_path.iterdir()) == [], "a partial or temporary output was left behind"

    fault.recover()
    assert len(party_processes(str(fed.workdir))) == len(fed.daemons)
    rerun = _run(fed, hospital_data, out, None)
    assert_same_release(out, rerun, reference)
    assert all(status(fed, i).session_id == "" for i in range(len(fed.daemons)))


def _run(
    fed: Federation,
    data: Dataset,
    out: Path,
    report: Path | None,
    fault: Fault | None = None,
    monkeypatch: pytest.MonkeyPatch | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    **callbacks: Any,
) -> dict[str, Any]:
    """The job under `SLACK_SECONDS` until its `fault` (if any) fires (see the module's doc)."""
    job = make_job(
        fed.hops,
        fed.leader_tls,
        data,
        _spec(data),
        out,
        report=report,
        rpc_seconds=SLACK_SECONDS,
        union_seconds=SLACK_SECONDS,
        union_chunk_bytes=chunk_bytes,
    )
    if fault is not None:
        assert monkeypatch is not None
        fault.job = job
        live_deadlines(monkeypatch, job)
    return run_lkc(job, **callbacks)


# Each case waits out a phase deadline (about 17 s); [strip] runs the same phase timer as
# [collect] and is left to the full suite.
@pytest.mark.parametrize("phase", ["collect", pytest.param("strip", marks=pytest.mark.slow)])
def test_a_union_phase_ends_within_its_deadline_counted_from_its_start(
    phase: str,
    hospital_federation: Federation,
    hospital_data: Dataset,
    reference: Centralized,
    fault_of: Callable[[str, int], Fault],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last party stalls through most of a union phase's first message and answers just
    in time, then freezes while the leader fetches the rest of its output: the phase still
    ends at its deadline counted from its start (the old leader gave the fetches a deadline
    of their own, so the phase ran to nearly twice its deadline)."""
    fed = hospital_federation
    union_seconds = 8.0
    # The first message's answer arrives after this, within the deadline: in the strip each
    # hop forwards with 0.5 s less of it (party/servicer.py), so the last hop's call ends 1 s
    # early, and the resumed hop needs some time to peel (and seal its progress for a rejoin).
    resume_after = 5.5
    fault = fault_of("freeze", 2)
    started: list[float] = []
    resumed = threading.Event()

    out = tmp_path / "release.csv"
    job = make_job(
        fed.hops,
        fed.leader_tls,
        hospital_data,
        _spec(hospital_data),
        out,
        rpc_seconds=SLACK_SECONDS,  # the phases before the stalled one: see the module's doc
        union_seconds=SLACK_SECONDS,
        # COLLECT's reply carries the first chunk: the fetches need more than one. STRIP's
        # carries none, so whole batches keep the rest of its ring pass after the resume short.
        union_chunk_bytes=CHUNK_BYTES if phase == "collect" else DEFAULT_CHUNK_BYTES,
    )
    fault.job = job
    live_deadlines(monkeypatch, job)

    def stall() -> None:
        job.rpc_seconds, job.union_seconds = RPC_SECONDS, union_seconds
        started.append(time.monotonic())
        os.kill(fault.pid, signal.SIGSTOP)
        wait_until_stopped(fault.pid)

        def resume() -> None:
            os.kill(fault.pid, signal.SIGCONT)
            resumed.set()

        threading.Timer(resume_after, resume).start()

    gather = fedanon.leader.union._Calls.gather

    def fetch(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        if name == fault.name and resumed.is_set():
            fault.fire()  # frozen for good, mid-phase
        return gather(self, name, *args, **kwargs)

    if phase == "collect":
        fan_out = Session.fan_out

        def stalled(self: Session, name: str, call: Any, *rest: Any) -> Any:
            if name == "union (collect)":
                stall()
            return fan_out(self, name, call, *rest)

        monkeypatch.setattr(Session, "fan_out", stalled)
    monkeypatch.setattr(fedanon.leader.union._Calls, "gather", fetch)

    def on_phase(text: str) -> None:  # before the leader takes the strip's deadline
        if phase == "strip" and text.startswith("union: collect: done"):
            stall()

    with pytest.raises(PartyFailure) as failure:
        run_lkc(job, on_phase=on_phase)
    elapsed = time.monotonic() - started[0]
    assert fault.fired_at is not None, (
        f"the party never answered the phase's first message: {failure.value}"
    )
    message = str(failure.value)
    assert f"party {fault.name}" in message and "union (" in message, message
    # The phase's deadline, the abort, and 3 s for a loaded machine; the old leader took
    # resume_after + union_seconds + the abort.
    limit = union_seconds + AFTER_DEADLINE_SECONDS + 3.0
    assert elapsed < limit, f"{message!r} took {elapsed:.1f} s from the phase's start"
    assert not out.exists()
    monkeypatch.undo()
    fault.recover()
    rerun = _run(fed, hospital_data, out, None)
    assert_same_release(out, rerun, reference)


@slow
def test_frozen_party_in_the_randomize_phase_is_named_and_the_next_job_runs(
    hospital_federation: Federation,
    hospital_data: Dataset,
    fault_of: Callable[[str, int], Fault],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A randomization job shares the plumbing: its own phase is bounded and named too."""
    fed = hospital_federation
    qids = ("sex", "marital_status", "employment")
    table = hospital_data.table
    spec = RandomizeSpec(qids, tuple(observed_domain(table[q]) for q in qids), p="optimal")
    out = tmp_path / "randomized.csv"
    job = RandomizeLeaderJob(fed.hops, fed.leader_tls, spec, out, rpc_seconds=SLACK_SECONDS)
    fault = fault_of("freeze", 1)
    fault.job = job  # its randomize phase reads the deadline as it starts
    with monkeypatch.context() as patched:
        _before_fan_out("randomize")(patched, fault)
        with pytest.raises(PartyFailure) as failure:
            run_randomize(job)
    assert fault.fired_at is not None
    elapsed = time.monotonic() - fault.fired_at
    message = str(failure.value)
    assert message.startswith(f"randomize: party {fault.name}:"), message
    assert elapsed < RPC_SECONDS + AFTER_DEADLINE_SECONDS + MARGIN_SECONDS, elapsed
    assert not out.exists()
    fault.recover()
    job.rpc_seconds = SLACK_SECONDS
    assert run_randomize(job)["released_records"] == len(table)
