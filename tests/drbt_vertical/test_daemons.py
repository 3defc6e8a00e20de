"""Vertical DRBT with every party a separate daemon process (``fedanon.leader.sim.federation``).

The same claims as the quick in-process tests, over the real deployment shape: one
``fedanon party serve`` process per party, mutual TLS on loopback, the leader in this process.
Daemon start-up costs a few seconds per federation, hence ``slow``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fedanon.leader.sim
from fedanon.errors import FedanonError
from fedanon.leader.kinds.drbt import DRBTLeaderJob, run_drbt
from fedanon.leader.sim import federation, split_columns
from tests.distributed.conftest import status
from tests.drbt_vertical.checks import (
    TOKEN,
    check_assignments,
    check_release,
    expected_dimensions,
    f_vs_centralized,
    read_release,
)
from tests.drbt_vertical.harness import clustered_table
from tests.harness.cli import run_cli

pytestmark = pytest.mark.slow


# One party is refused (tests/cli/test_cli_hardening.py).
@pytest.mark.parametrize("parties", [2, 3, 4])
def test_sim_drbt_over_daemons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parties: int
) -> None:
    """`fedanon sim drbt` with real daemons: release shape, tokens, files at every party, F."""
    table, truth = clustered_table(m=300, d=12, seed=10 + parties)
    data = tmp_path / "blobs.csv"
    table.to_csv(data, index=False)
    real = fedanon.leader.sim.federation
    feds: list[fedanon.leader.sim.Federation] = []

    @contextlib.contextmanager
    def keep_workdir(parts, taxonomy, workdir=None, **options):
        with real(parts, taxonomy, workdir=tmp_path / "fed", **options) as fed:
            feds.append(fed)
            yield fed

    monkeypatch.setattr(fedanon.leader.sim, "federation", keep_workdir)
    out = tmp_path / "release.csv"
    done = run_cli(
        *("sim", "drbt", "--parties", str(parties), "--data", data, "--id", "pid"),
        *("--matrix", "sparse", "--clusters", "3", "--send-assignment", "--seed", "3"),
        *("--out", out, "--json"),
    )
    assert done.code == 0, done.err
    printed = json.loads(done.out)
    (fed,) = feds
    assert all(d.process is not None and d.process.poll() is not None for d in fed.daemons)
    assert printed["dimensions"] == expected_dimensions(12, parties)
    assert printed["f_measure_vs_centralized_original"] > 0.9
    release = check_release(out, table, "pid", parties, clusters=3)
    directories = [fed.workdir / f"{d.name}-out" for d in fed.daemons]
    labels = check_assignments(directories, table, "pid", release, truth)
    assert f_vs_centralized(labels, table, "pid", 3) > 0.9
    for daemon in fed.daemons:
        assert "cluster assignment written" in daemon.log.read_text()


def test_console_script(tmp_path: Path) -> None:
    """The installed `fedanon` entry point, as a user runs it (its own process tree)."""
    table, _ = clustered_table(m=200, d=10, seed=3)
    data = tmp_path / "blobs.csv"
    table.drop(columns=["pid"]).to_csv(data, index=False)  # no --id: row numbers are added
    out, report = tmp_path / "release.csv", tmp_path / "report.json"
    fedanon = Path(sys.executable).with_name("fedanon")
    done = subprocess.run(
        [
            str(fedanon),
            "sim",
            "drbt",
            "--parties",
            "3",
            "--data",
            str(data),
            "--n-components",
            "2",
            "--clusters",
            "3",
            "--out",
            str(out),
            "--report",
            str(report),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["dimensions"] == 6  # k_i = 2 for each of 3 parties
    assert printed["f_measure_vs_centralized_original"] > 0.9
    assert json.loads(report.read_text())["objects"] == 200
    release = read_release(out)  # k fixed to 2 per party, not ceil(d_i / 2)
    assert list(release.columns) == ["token", "p1", "p2", "p3", "p4", "p5", "p6", "cluster"]
    assert len(release) == 200 and release["token"].is_unique
    assert release["token"].map(lambda t: TOKEN.fullmatch(t) is not None).all()
    assert set(release["cluster"]) == {0, 1, 2}


def test_missing_ids_abort_over_daemons(tmp_path: Path) -> None:
    """Party 2 lacks 7 of the 300 ids: the leader names it, writes nothing, parties reset."""
    table, _ = clustered_table(m=300, d=9, seed=1)
    parts = split_columns(table, 3, "pid")
    parts[1] = parts[1].drop(index=list(np.random.default_rng(0).choice(300, 7, replace=False)))
    out, report = tmp_path / "release.csv", tmp_path / "report.json"
    with federation(parts, None, secure=True, workdir=tmp_path / "fed") as fed:
        job = DRBTLeaderJob(
            parties=fed.hops,
            tls=fed.leader_tls,
            out=out,
            id_column="pid",
            send_assignment=True,
            report=report,
        )
        with pytest.raises(FedanonError) as raised:
            run_drbt(job)
        assert str(raised.value) == "id list: party hospital-2 lacks 7 of 300 ids"
        for index in range(3):
            state = status(fed, index)
            assert state.session_id == ""
            assert "aborted: id list: party hospital-2 lacks 7 of 300 ids" in state.last_error
        # the daemons are still serving: a session without the short party works
        healthy = DRBTLeaderJob(
            parties=[fed.hops[0], fed.hops[2]],
            tls=fed.leader_tls,
            out=tmp_path / "other.csv",
            id_column="pid",
        )
        assert run_drbt(healthy)["objects"] == 300
    assert not out.exists() and not report.exists()
    assert not any((tmp_path / "fed" / f"hospital-{i}-out").exists() for i in (1, 2, 3))
