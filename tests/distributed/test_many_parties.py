"""Twenty parties on one small machine: start-up waits that grow with the federation (#28).

N daemons started together share the cores, so each needs about N times as long as one alone;
the simulated federation waits for all of them at once, within a bound that grows with N, and
notices a daemon as soon as it listens (no multi-second reconnect backoff of the probe).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fedanon.errors import FedanonError
from fedanon.leader.sim import Daemon, Federation, federation, free_ports, split_table
from fedanon.leader.startup import startup_seconds
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from tests.distributed.conftest import (
    adult_dataset,
    assert_same_release,
    centralized,
    requires_adult,
    wait_gone,
)
from tests.harness.cli import run_cli_process
from tests.harness.wait import wait_until

PARTIES = 20
ADULT_ROWS = 4000


@pytest.mark.slow
@requires_adult
def test_sim_with_twenty_parties_equals_the_centralized_release(tmp_path: Path) -> None:
    """``fedanon sim lkc --parties 20`` on a small Adult slice: exit 0, the report names 20
    parties, the release equals the centralized one, and no daemon outlives the command."""
    dataset = adult_dataset().head(ADULT_ROWS)
    data, out, report, workdir = (tmp_path / n for n in ("adult.csv", "out.csv", "r.json", "w"))
    dataset.table.to_csv(data, index=False)
    run = run_cli_process(
        *("sim", "lkc", "--parties", str(PARTIES), "--data", str(data)),
        *("--taxonomy", str(dataset.taxonomy_path), "--class", "class"),
        *("--L", "2", "--k", "10", "--C", "0.5", "--quiet"),
        *("--workdir", str(workdir), "--out", str(out), "--report", str(report)),
        timeout=startup_seconds(PARTIES) + 600,
    )
    assert run.code == 0, run.err
    parsed = json.loads(report.read_text())
    assert len(parsed["parties"]) == PARTIES
    assert_same_release(out, parsed, centralized(dataset, dataset.spec(L=2, K=10, C="0.5")))
    assert not wait_gone(str(workdir))


Idle = tuple[Federation, list[subprocess.Popen[bytes]]]


def _idle_federation(tmp_path: Path, count: int) -> Idle:
    """`count` "daemons" that are alive but never listen (a sleeping process each, a port
    nobody binds): what a daemon still importing its libraries looks like from outside."""
    ports = free_ports(count)
    daemons, processes = [], []
    for i in range(count):
        process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        processes.append(process)
        daemon = Daemon(f"hospital-{i + 1}", f"127.0.0.1:{ports[i]}", tmp_path, tmp_path / "x")
        daemon.process = process
        daemons.append(daemon)
    return Federation(tmp_path, daemons, None, tmp_path, None, False), processes


def test_start_up_bound_grows_with_the_number_of_daemons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Daemons alive and still starting keep the wait going up to a bound that grows with their
    number (a fixed 60 s per daemon failed 20 daemons on two cores); when it passes, the error
    names a late party and how many were ready. The clock is simulated: 5 s per look."""
    clock = [0.0]

    def tick() -> float:
        clock[0] += 5.0
        return clock[0]

    results = {}
    for count in (1, PARTIES):
        fed, processes = _idle_federation(tmp_path, count)
        clock[0] = 0.0
        monkeypatch.setattr(time, "monotonic", tick)
        try:
            with pytest.raises(FedanonError) as error:
                fed.wait_all_ready(fed.daemons)
        finally:
            monkeypatch.undo()
            for process in processes:
                process.kill()
                process.wait()
        results[count] = (clock[0], str(error.value))
    one, many = results[1][0], results[PARTIES][0]
    assert one >= 60  # a daemon alone gets at least the old minute
    assert many >= PARTIES * 15  # and each of twenty more than a dozen seconds of two cores
    assert f"0 of {PARTIES} parties ready" in results[PARTIES][1]
    assert "party hospital-1 not ready after" in results[PARTIES][1]


def test_a_daemon_that_exits_ends_the_wait_at_once(tmp_path: Path) -> None:
    """While others are still starting, a daemon that died is named at once (not after the
    others' start-up bound)."""
    fed, processes = _idle_federation(tmp_path, 3)
    dead = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    dead.wait()
    fed.daemons[2].process = dead
    started = time.monotonic()
    try:
        with pytest.raises(FedanonError, match="party hospital-3 exited at start-up"):
            fed.wait_all_ready(fed.daemons)
    finally:
        for process in processes:
            process.kill()
            process.wait()
    assert time.monotonic() - started < 30


@pytest.mark.slow
def test_a_daemon_that_listens_late_is_noticed_at_once(tmp_path: Path) -> None:
    """A daemon whose port refused connections for most of a minute (its start was slow) is
    ready for the leader within seconds of printing that it listens: the readiness probe's
    reconnect backoff stays short (gRPC's default grows to minutes: tens of seconds late)."""
    parts = split_table(generate_hospital(200, 3), 3, "random", 3)
    with federation(parts, hospital_taxonomy_path(), workdir=tmp_path / "w") as fed:
        late = fed.daemons[1]
        fed.stop(late)
        late.process = None  # not started yet: its port refuses connections
        listening: list[float] = []
        waited = threading.Event()
        marker = late.log.read_text().count("listening on port")

        def start_late() -> None:
            time.sleep(50)
            fed.start(late)
            wait_until(lambda: late.log.read_text().count("listening on port") != marker, 180, 0.02)
            listening.append(time.monotonic())
            waited.wait(200)  # the daemon dies with the thread that started it (PDEATHSIG)

        starter = threading.Thread(target=start_late, daemon=True)
        starter.start()
        fed.wait_ready(late, timeout=180)
        ready = time.monotonic()
        waited.set()
        starter.join(30)
    assert listening, "the restarted daemon never said it listens"
    assert ready - listening[0] < 3.0


def test_idle_key_wait_grows_with_the_number_of_daemons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twenty daemons refill their idle key pools together on shared cores: the default wait
    for it grows with their number like the start-up's (simulated clock, 5 s per look)."""
    fed, processes = _idle_federation(tmp_path, PARTIES)
    for process in processes:
        process.kill()
        process.wait()
    clock = [0.0]

    def tick() -> float:
        clock[0] += 5.0
        return clock[0]

    monkeypatch.setattr(time, "monotonic", tick)
    monkeypatch.setattr(time, "sleep", lambda _seconds: None)
    refilled = fed.wait_idle_keys()  # the logs never say a pool is full
    monkeypatch.undo()
    assert not refilled
    assert clock[0] >= PARTIES * 15
