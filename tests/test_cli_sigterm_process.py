"""SIGTERM to a real ``fedanon`` process: exit 143, one line on stderr, no file left behind.

The command reads its table from a named pipe nobody writes to, so it is certainly still running
(blocked in its input) when the signal arrives; the signal is sent once the process has
installed its SIGTERM handler (read from /proc/PID/status). What happens when the signal lands
in the middle of writing the outputs is tested in-process in test_cli_output_safety.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .test_cli_anonymize import TAXONOMY


def catches_sigterm(pid: int) -> bool:
    """True once the process has a handler for SIGTERM (its bit in SigCgt)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


def test_sigterm_ends_a_running_command_cleanly(tmp_path: Path):
    (tmp_path / "taxonomy.toml").write_text(TAXONOMY, encoding="utf-8")
    os.mkfifo(tmp_path / "data.csv")
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
            str(tmp_path / "data.csv"),
            "--taxonomy",
            str(tmp_path / "taxonomy.toml"),
            "--L",
            "2",
            "--K",
            "4",
            "--C",
            "0.5",
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
    try:
        deadline = time.monotonic() + 120
        while not catches_sigterm(process.pid):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the CLI never installed its SIGTERM handler"
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 143, err
    assert err.splitlines() == ["fedanon: terminated"]
    assert list(out.iterdir()) == []
