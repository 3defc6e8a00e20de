"""SIGTERM to a real ``fedanon`` process: exit 143, one line on stderr, no file left behind.

The command reads its table from a named pipe. The test opens the pipe's writing end, which
succeeds only once the command has opened it for reading (so it is running its handler, past
start-up), writes nothing, and sends SIGTERM while the command waits for its input. What
happens when the signal lands in the middle of writing the outputs is tested in-process in
test_cli_output_safety.py.
"""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

from tests.harness.cli import FEDANON, TAXONOMY, lkc_options, owned, stop_with
from tests.harness.wait import wait_until


def open_when_read(fifo: Path, process: subprocess.Popen, seconds: float = 120) -> int:
    """The writing end of `fifo`, once `process` has opened it for reading."""

    def opened() -> list[int]:  # a list: descriptor 0 is a valid answer
        try:
            return [os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)]
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
        assert process.poll() is None, process.communicate()
        return []

    descriptor = wait_until(opened, seconds, interval=0.02)
    assert descriptor, "the command never opened its input"
    return descriptor[0]


def test_sigterm_ends_a_running_command_cleanly(tmp_path: Path):
    (tmp_path / "taxonomy.toml").write_text(TAXONOMY, encoding="utf-8")
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    out.mkdir()
    command = [
        *FEDANON,
        *("anonymize", "lkc", "--quiet"),
        *lkc_options(fifo, tmp_path / "taxonomy.toml"),
        *("--out", str(out / "release.csv"), "--report", str(out / "report.json")),
    ]
    popen = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with owned(popen) as process:
        writer = open_when_read(fifo, process)
        try:
            err = stop_with(process).err
        finally:
            os.close(writer)
    assert process.returncode == 143, err
    assert err.splitlines() == ["fedanon: terminated"]
    assert list(out.iterdir()) == []
