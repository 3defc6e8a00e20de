"""A party daemon listens without pandas and serves an LKC job, a rejoin included, without it
(#28, session 11; docs/distributed.md "Start-up").

A restarted daemon's start-up is part of every rejoin's cost: it imported pandas (about half
of its CPU until it listened) and every job kind's module before it listened, though an LKC
party counts and releases its table as Arrow text. It now reads its table with Arrow alone,
imports a job kind's module when a handshake first names the kind, and numbers its release
for the union with Arrow's hashing; the release is unchanged.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fedanon.algorithms.tds.engine import StepInfo
from fedanon.crypto.identity import create_ca, issue_identity, save_ca, save_identity
from fedanon.leader.sim import Federation, federation, free_ports, split_table
from fedanon.synth import generate_hospital
from tests.distributed.conftest import (
    assert_same_release,
    centralized,
    hospital_dataset,
    run_distributed,
)
from tests.party.test_party_startup import _config as party_config

KINDS = ("c45", "drbt", "evaluate", "kactus", "lkc", "randomize")
#: What a daemon must not have imported: pandas, and the job kinds' handler modules (the LKC
#: one once an LKC job came).
WATCHED = ["pandas", *(f"fedanon.party.handlers.{kind}" for kind in KINDS)]

# `fedanon party serve` in a fresh interpreter; when it has said it listens (where it would
# wait for a signal), it reports the watched modules it has imported and stops as on SIGTERM.
LISTENING_PROBE = f"""
import json, sys
import fedanon.party.daemon as daemon
from fedanon.cli.main import main

def report(stop):
    print("loaded " + json.dumps([m for m in {WATCHED!r} if m in sys.modules]), flush=True)

daemon.wait_for = report
sys.exit(main(sys.argv[1:]))
"""

# Loaded by every Python process the test starts (PYTHONPATH): a party daemon that exits
# normally (SIGTERM) writes the watched modules it imported in its life, under its pid.
SITE = f"""
import atexit, json, os, sys

def _report():
    if "fedanon.party.daemon" in sys.modules:
        path = os.path.join(os.environ["FEDANON_TEST_MODULES"], f"{{os.getpid()}}.json")
        with open(path, "w", encoding="utf-8") as out:
            json.dump([m for m in {WATCHED!r} if m in sys.modules], out)

atexit.register(_report)
"""


def _party(root: Path) -> Path:
    """A party.toml for one daemon with no next hop, its table and certificates."""
    ca = create_ca("imports test CA")
    save_ca(ca, root / "certs")
    save_identity(issue_identity(ca, "hospital-a", "party"), root / "certs")
    generate_hospital(300, seed=4).to_csv(root / "a.csv", index=False)
    return party_config(root, free_ports(1)[0])


def test_a_daemon_listens_without_pandas_nor_any_job_kind(tmp_path: Path) -> None:
    config = _party(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", LISTENING_PROBE, "party", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    listening = [i for i, line in enumerate(lines) if "listening on port" in line]
    loaded = [i for i, line in enumerate(lines) if line.startswith("loaded ")]
    assert listening and loaded and listening[0] < loaded[0], done.stdout
    assert json.loads(lines[loaded[0]][len("loaded ") :]) == []


class KillAndRestart:
    """``on_step``: SIGKILL daemon #`victim` after `iteration`, start it again at once."""

    def __init__(self, fed: Federation, victim: int, iteration: int) -> None:
        self.fed, self.victim, self.iteration, self.fired = fed, victim, iteration, False

    def __call__(self, step: StepInfo) -> None:
        if step.iteration >= self.iteration and not self.fired:
            self.fired = True
            daemon = self.fed.daemons[self.victim]
            self.fed.stop(daemon, signal.SIGKILL)
            self.fed.start(daemon)


def watch_daemon_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make every daemon the test starts write the watched modules it imported in its life
    (`SITE`) to the folder returned, as ``PID.json``, when it exits normally."""
    site, reports = tmp_path / "site", tmp_path / "modules"
    site.mkdir()
    reports.mkdir()
    (site / "sitecustomize.py").write_text(SITE, encoding="utf-8")
    path = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))
    monkeypatch.setenv("FEDANON_TEST_MODULES", str(reports))
    return reports


def test_daemons_serve_an_lkc_job_and_a_rejoin_without_pandas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = watch_daemon_imports(tmp_path, monkeypatch)
    data = hospital_dataset(600, seed=5)
    spec = data.spec(L=3, K=20, C="0.2")
    out = tmp_path / "release.csv"
    parts = split_table(data.table, 3, "random", seed=2)
    with federation(parts, data.taxonomy_path, workdir=tmp_path / "fed", rpc_seconds=30) as fed:
        kill = KillAndRestart(fed, victim=1, iteration=2)
        report = run_distributed(
            fed.hops,
            fed.leader_tls,
            data,
            spec,
            out,
            on_step=kill,
            rpc_seconds=30.0,
            rejoin_seconds=120.0,
        )
        pids = [d.process.pid for d in fed.daemons if d.process is not None]
    assert kill.fired
    assert report["rejoined"] == [{"party": "hospital-2", "iteration": 3}]
    assert_same_release(out, report, centralized(data, spec))
    # Every daemon (the restarted one included) served the job with the LKC handler alone.
    assert len(pids) == 3
    for pid in pids:
        loaded = json.loads((reports / f"{pid}.json").read_text(encoding="utf-8"))
        assert loaded == ["fedanon.party.handlers.lkc"], pid
