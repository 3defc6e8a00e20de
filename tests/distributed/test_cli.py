"""``fedanon sim lkc`` as a user runs it: a real process tree, exit codes, files, no leftovers.

Each test passes ``--workdir`` inside its own temporary directory, so the daemons' command lines
name that directory and the /proc scan for leftover ``party serve`` processes cannot mistake
another engineer's daemons for ours.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from fedanon.leader.sim import split_table
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from tests.distributed.conftest import (
    HOSPITAL_QIDS,
    assert_same_release,
    centralized,
    hospital_dataset,
    party_processes,
    wait_gone,
)
from tests.harness.cli import FEDANON, CliResult, run_cli_process
from tests.harness.wait import wait_until

ROWS, SEED = 1500, 21


def fedanon(*args: str, timeout: float = 240) -> CliResult:
    return run_cli_process(*args, timeout=timeout)


@pytest.fixture(scope="module")
def hospital_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "hospital.csv"
    generate_hospital(ROWS, SEED).to_csv(path, index=False)
    return path


def sim_args(data: Path, workdir: Path, out: Path, *extra: str, K: int = 20) -> list[str]:
    return [
        "sim",
        "lkc",
        "--parties",
        "3",
        "--data",
        str(data),
        "--taxonomy",
        str(hospital_taxonomy_path()),
        "--L",
        "3",
        "--k",
        str(K),
        "--C",
        "0.2",
        "--drop",
        "patient_id",
        "--workdir",
        str(workdir),
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


@pytest.fixture(scope="module")
def sim_run(
    hospital_csv: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[CliResult, Path, Path, Path]:
    """One successful ``fedanon sim lkc`` (module-scoped: several tests inspect its result)."""
    tmp = tmp_path_factory.mktemp("sim")
    out, report, workdir = tmp / "release.csv", tmp / "report.json", tmp / "w"
    run = fedanon(*sim_args(hospital_csv, workdir, out, "--report", str(report)))
    return run, out, report, workdir


@pytest.mark.slow
def test_sim_end_to_end_release_passes_check(
    sim_run: tuple[CliResult, Path, Path, Path],
) -> None:
    """Exit 0, the release and report exist, ``fedanon check lkc`` accepts the release, it
    equals the centralized one, and no daemon outlives the command."""
    run, out, report, workdir = sim_run
    assert run.code == 0, run.err
    assert out.exists() and report.exists()
    check = fedanon(
        "check",
        "lkc",
        "--data",
        str(out),
        "--qid",
        ",".join(HOSPITAL_QIDS),
        "--sensitive-values",
        "diagnosis=HIV,Schizophrenia",
        "--L",
        "3",
        "--k",
        "20",
        "--C",
        "0.2",
    )
    assert check.code == 0, check.out + check.err
    dataset = hospital_dataset(ROWS, SEED)
    parsed = json.loads(report.read_text())
    assert parsed["mode"] == "distributed" and len(parsed["parties"]) == 3
    assert_same_release(out, parsed, centralized(dataset, dataset.spec(L=3, K=20, C="0.2")))
    assert not wait_gone(str(workdir))


@pytest.mark.slow
def test_check_reads_the_requirement_from_the_taxonomy(
    sim_run: tuple[CliResult, Path, Path, Path],
) -> None:
    """The way the docs check a distributed release: QIDs and sensitive values from the same
    taxonomy file the sim used (``--taxonomy``) instead of listing them again."""
    run, out, _, _ = sim_run
    assert run.code == 0, run.err
    check = fedanon(
        "check",
        "lkc",
        "--data",
        str(out),
        "--taxonomy",
        str(hospital_taxonomy_path()),
        "--L",
        "3",
        "--k",
        "20",
        "--C",
        "0.2",
    )
    assert "Traceback" not in check.err, check.err
    assert check.code == 0, check.out + check.err


@pytest.mark.slow
def test_sim_failure_leaves_no_output_and_no_daemons(hospital_csv: Path, tmp_path: Path) -> None:
    """K larger than the table: non-zero exit with a one-line reason, no release, no report,
    no temporary file, and every daemon gone."""
    out, report, workdir = tmp_path / "release.csv", tmp_path / "report.json", tmp_path / "w"
    run = fedanon(*sim_args(hospital_csv, workdir, out, "--report", str(report), K=ROWS + 1))
    assert run.code != 0
    assert "infeasible" in run.err and "Traceback" not in run.err, run.err
    assert not out.exists() and not report.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w"], "stray output files"
    assert not wait_gone(str(workdir))


@pytest.mark.slow
def test_pad_to_below_a_party_size_fails_without_stating_it(
    hospital_csv: Path, tmp_path: Path
) -> None:
    """``--pad-to`` smaller than a party's table: the union is refused with a one-line reason
    that names the party and pad_to but not the record count padding is meant to hide."""
    out, workdir = tmp_path / "release.csv", tmp_path / "w"
    run = fedanon(*sim_args(hospital_csv, workdir, out, "--pad-to", "7"))
    assert run.code != 0
    assert "pad_to=7" in run.err and "hospital-" in run.err, run.err
    assert "Traceback" not in run.err, run.err
    sizes = {len(part) for part in split_table(pd.read_csv(hospital_csv), 3, "random", 1)}
    assert not any(re.search(rf"\b{size}\b", run.err) for size in sizes), run.err
    assert not out.exists()
    assert not wait_gone(str(workdir))


@pytest.mark.slow
def test_insecure_mode_warns(hospital_csv: Path, tmp_path: Path) -> None:
    """``--insecure`` works but says loudly that nothing is authenticated, in the command and
    in every daemon's log."""
    out, workdir = tmp_path / "release.csv", tmp_path / "w"
    run = fedanon(*sim_args(hospital_csv, workdir, out, "--insecure"))
    assert run.code == 0, run.err
    assert "WARNING: --insecure" in run.err
    assert out.exists()
    logs = sorted(workdir.glob("*.log"))
    assert len(logs) == 3
    for log in logs:
        text = log.read_text()
        assert "WARNING: --insecure" in text and "INSECURE" in text, text
    assert not wait_gone(str(workdir))


@pytest.fixture
def sim_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path, Path]]:
    """A sim on a table big enough to still be running when the test kills it."""
    data = tmp_path / "big.csv"
    generate_hospital(60_000, 3).to_csv(data, index=False)
    out, workdir = tmp_path / "release.csv", tmp_path / "w"
    process = subprocess.Popen(
        [*FEDANON, *sim_args(data, workdir, out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        yield process, workdir, out
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        for pid in party_processes(str(workdir)):  # never leave ours behind, even on failure
            os.kill(pid, signal.SIGKILL)


def listening(workdir: Path) -> list[Path]:
    """The daemons' logs that say they listen: a daemon prints it after it has asked to die
    with its parent (``tie_to_parent``), so from then on the kernel ends it with the sim."""
    return [log for log in workdir.glob("*.log") if "listening on port" in log.read_text()]


@pytest.mark.slow
def test_killing_the_sim_takes_its_daemons_along(
    sim_process: tuple[subprocess.Popen[bytes], Path, Path],
) -> None:
    """SIGKILL of the sim (no cleanup code runs) still leaves no daemon: PR_SET_PDEATHSIG."""
    process, workdir, out = sim_process

    def all_listening() -> bool:
        if len(listening(workdir)) >= 3:
            return True
        assert process.poll() is None, "the sim ended before its daemons were listening"
        return False

    assert wait_until(all_listening, 120, interval=0.2), "daemons never listened"
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not wait_gone(str(workdir))
    assert not out.exists()
