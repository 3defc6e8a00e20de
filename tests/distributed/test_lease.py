"""Session leases with real daemons: a live job is never taken over, a dead one is recoverable.

A party holds one session at a time under a lease that every message of its leader renews, the
leader's heartbeat included. A second leader is refused while the lease runs, and the refusal
changes nothing at any party; a session whose leader died is evicted once its lease lapsed.
The shared federation runs with a short lease (``LEASE_SECONDS``) so that both show in seconds.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fedanon.algorithms.randomization.coding import observed_domain
from fedanon.algorithms.randomization.jobspec import RandomizeSpec
from fedanon.algorithms.tds.engine import StepInfo
from fedanon.leader.federation import PartyFailure
from fedanon.leader.kinds.randomize import RandomizeLeaderJob, run_randomize
from fedanon.leader.sim import Federation
from tests.distributed.conftest import (
    LEASE_SECONDS,
    Dataset,
    assert_same_release,
    centralized,
    run_distributed,
    running_leases,
    status,
    wait_leases_lapsed,
)
from tests.harness.cli import FEDANON
from tests.harness.wait import holds_for, wait_until

RPC_SECONDS = 10.0


def snapshot(fed: Federation) -> list[tuple[str, str, int]]:
    """What a refusal must not change at any party: session, last error, sessions served."""
    return [
        (r.session_id, r.last_error, r.sessions_served)
        for r in (status(fed, i) for i in range(len(fed.daemons)))
    ]


class SecondLeader:
    """Called while a first job runs: waits far longer than the lease (so that only the first
    leader's heartbeats can have renewed it), then starts a second LKC job, which must be
    refused; keeps the refusal and every party's state just before and after it."""

    def __init__(self, fed: Federation, data: Dataset, out: Path) -> None:
        self.fed, self.data, self.out = fed, data, out
        self.before: list[tuple[str, str, int]] = []
        self.after: list[tuple[str, str, int]] = []
        self.message = ""

    def __call__(self, *_: Any) -> None:
        # Longer than a lease, the lease runs at every party at every look: only the first
        # leader's heartbeats can have renewed it.
        everyone = sorted(d.name for d in self.fed.daemons)
        assert holds_for(
            lambda: sorted(running_leases(self.fed)) == everyone, LEASE_SECONDS + 2, 0.5
        ), running_leases(self.fed)
        self.before = snapshot(self.fed)
        spec = self.data.spec(L=3, K=20, C="0.2")
        with pytest.raises(PartyFailure) as refused:
            run_distributed(
                self.fed.hops,
                self.fed.leader_tls,
                self.data,
                spec,
                self.out,
                rpc_seconds=RPC_SECONDS,
            )
        self.after, self.message = snapshot(self.fed), str(refused.value)

    def assert_refused_as_busy(self, first_session: str) -> None:
        """Refused at the handshake naming a busy party; nothing changed; no output."""
        message = self.message
        assert message.startswith("handshake: party hospital-1: "), message
        assert "busy with another session" in message and "lease" in message, message
        assert self.after == self.before, "a refused leader changed a party's state"
        assert self.before and all(sid == first_session for sid, _, _ in self.before)
        assert not self.out.exists()


def test_second_leader_is_refused_and_the_first_job_completes(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """Mid-job, after the first leader was silent longer than the lease (only its heartbeat
    ran - like a slow iteration on Adult), a second leader is refused at the handshake with a
    message naming a busy party; no party's session, last error or session count changes, and
    the first job completes with the release centralized anonymization gives."""
    fed = hospital_federation
    spec = hospital_data.spec(L=3, K=20, C="0.2")
    second = SecondLeader(fed, hospital_data, tmp_path / "second.csv")

    def on_step(step: StepInfo) -> None:
        if step.iteration == 2:
            second()

    out = tmp_path / "release.csv"
    report = run_distributed(
        fed.hops, fed.leader_tls, hospital_data, spec, out, on_step=on_step, rpc_seconds=RPC_SECONDS
    )
    second.assert_refused_as_busy(report["session_id"])
    assert_same_release(out, report, centralized(hospital_data, spec))


# Slow (waits out a lease): the LKC job above runs the same heartbeat plumbing in the quick subset.
@pytest.mark.slow
def test_randomization_job_keeps_its_lease_while_its_leader_computes(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """Randomization jobs share the session plumbing, lease heartbeats included: while the
    leader makes its plan for longer than the lease, a second leader is refused as busy without
    changing any party's state, and the randomization job then completes with every record."""
    fed = hospital_federation
    qids = ("sex", "marital_status", "employment")
    table = hospital_data.table
    spec = RandomizeSpec(qids, tuple(observed_domain(table[q]) for q in qids), p="optimal")
    second = SecondLeader(fed, hospital_data, tmp_path / "second.csv")
    out = tmp_path / "randomized.csv"
    job = RandomizeLeaderJob(fed.hops, fed.leader_tls, spec, out, rpc_seconds=RPC_SECONDS)
    report = run_randomize(job, on_plan=second)
    second.assert_refused_as_busy(report["session_id"])
    assert report["released_records"] == len(table)
    assert len(pd.read_csv(out, dtype=str)) == len(table)


def _write_job(fed: Federation, dataset: Dataset, workdir: Path) -> Path:
    """A job.toml for `fed` in the documented format (as an operator would run it)."""
    parties = "\n".join(
        f'[[parties]]\nname = "{h.name}"\naddress = "{h.address}"' for h in fed.hops
    )
    assert fed.leader_tls is not None
    job = workdir / "job.toml"
    job.write_text(
        f"""
name = "leader"
taxonomy = "{dataset.taxonomy_path}"
out = "{workdir / "release.csv"}"
[lkc]
L = 3
K = 20
C = "0.2"
drop = {list(dataset.drop)}
{parties}
[tls]
ca = "{fed.leader_tls.ca}"
cert = "{fed.leader_tls.cert}"
key = "{fed.leader_tls.key}"
[timeouts]
rpc_seconds = {RPC_SECONDS}
""",
        encoding="utf-8",
    )
    return job


# Slow (a leader process killed, then a lease waited out): the quick subset evicts a lapsed
# session in process (tests/party/test_lease_mutants.py).
@pytest.mark.slow
def test_killed_leader_session_is_evicted_after_the_lease(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """A `leader run` process is SIGKILLed while parties 1 and 2 hold its session (party 3 is
    stopped, so the handshake cannot finish first). The dead leader's session stays put until
    its lease lapses - nobody else removes it - and then the next job evicts it, runs, and
    equals centralized; party 1's Status names the eviction and its reason."""
    fed = hospital_federation
    third = fed.daemons[2].process
    assert third is not None
    job = _write_job(fed, hospital_data, tmp_path)
    third.send_signal(signal.SIGSTOP)
    leader = None
    try:
        leader = subprocess.Popen(
            [
                *FEDANON,
                "leader",
                "run",
                "--config",
                str(job),
                "--quiet",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def both_opened() -> bool:
            if status(fed, 0).session_id and status(fed, 1).session_id:
                return True
            assert leader.poll() is None, "the leader exited before the parties opened"
            return False

        assert wait_until(both_opened, 60), "parties 1 and 2 never opened the session"
        dead = status(fed, 0).session_id
        leader.send_signal(signal.SIGKILL)
        leader.wait()
    finally:
        if leader is not None and leader.poll() is None:
            leader.kill()
            leader.wait()
        third.send_signal(signal.SIGCONT)
    assert status(fed, 0).session_id == dead and status(fed, 1).session_id == dead
    # The dead leader's lease still runs at the two parties that opened its session, no longer
    # than the lease itself; it lapses unrenewed, and the session stays held until a new job.
    running = running_leases(fed, [0, 1])
    assert sorted(running) == ["hospital-1", "hospital-2"], running
    assert all(0 < left <= LEASE_SECONDS for left in running.values()), running
    assert not wait_leases_lapsed(fed)
    assert status(fed, 0).session_id == dead and status(fed, 1).session_id == dead
    out = tmp_path / "rerun.csv"
    spec = hospital_data.spec(L=3, K=20, C="0.2")
    report = run_distributed(
        fed.hops, fed.leader_tls, hospital_data, spec, out, rpc_seconds=RPC_SECONDS
    )
    assert_same_release(out, report, centralized(hospital_data, spec))
    evicted = status(fed, 0).last_error
    assert f"session {dead[:12]} evicted" in evicted and "lease lapsed" in evicted, evicted
    assert all(status(fed, i).session_id == "" for i in range(3))
