"""SIGTERM to a real ``fedanon anonymize lkc`` process: exit 143, one line, no file left behind.

The signal is sent once the process has installed its SIGTERM handler (read from
/proc/PID/status), while it is still anonymizing a table large enough to take seconds.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedanon.synth import generate_hospital, hospital_taxonomy_path


def catches_sigterm(pid: int) -> bool:
    """True once the process has a handler for SIGTERM (bit 15 of SigCgt)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


@pytest.mark.slow
def test_sigterm_ends_a_running_command_cleanly(tmp_path: Path):
    data = tmp_path / "hospital.csv"
    generate_hospital(300_000, 3).to_csv(data, index=False)
    out = tmp_path / "out"
    out.mkdir()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fedanon.cli.main",
            "anonymize",
            "lkc",
            "--data",
            str(data),
            "--taxonomy",
            str(hospital_taxonomy_path()),
            "--drop",
            "patient_id",
            "--L",
            "3",
            "--K",
            "10",
            "--C",
            "0.25",
            "--quiet",
            "--out",
            str(out / "release.csv"),
            "--report",
            str(out / "report.json"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not catches_sigterm(process.pid) and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert err.splitlines() == ["fedanon: terminated"]
    assert list(out.iterdir()) == []
