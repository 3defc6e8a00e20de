"""SIGTERM to a real ``fedanon`` process: exit 143, one line on stderr, no file left behind.

The command is the real CLI (``python -m fedanon.cli.main``) started under an audit hook that
stops the process (SIGSTOP) when it opens its table: it is then running its handler, past
start-up, at a point the test knows. The test waits until the process is stopped, sends
SIGTERM and continues it: the signal lands while the command reads its input. (A FIFO used to
hold the command there; a FIFO is now refused as input, fedanon/readers/inputs.py.) What
happens when the signal lands in the middle of writing the outputs is tested in-process in
test_cli_output_safety.py.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tests.harness.cli import TAXONOMY, lkc_options, owned, small_table, stop_with
from tests.harness.wait import wait_until

#: The CLI, stopping itself (SIGSTOP) the first time it opens the path given as argv[1].
STOPPED_AT_OPEN = """
import os, runpy, signal, sys
target = sys.argv.pop(1)
def stop_at(event, args):
    global target
    if event == "open" and target is not None and str(args[0]) == target:
        target = None
        os.kill(os.getpid(), signal.SIGSTOP)
sys.addaudithook(stop_at)
runpy.run_module("fedanon.cli.main", run_name="__main__", alter_sys=True)
"""


def _state(pid: int) -> str:
    """The one-letter state of process `pid` (``T``: stopped), from /proc."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_sigterm_ends_a_running_command_cleanly(tmp_path: Path):
    (tmp_path / "taxonomy.toml").write_text(TAXONOMY, encoding="utf-8")
    data = tmp_path / "data.csv"
    data.write_text(small_table(), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    command = [
        *(sys.executable, "-c", STOPPED_AT_OPEN, str(data)),
        *("anonymize", "lkc", "--quiet"),
        *lkc_options(data, tmp_path / "taxonomy.toml"),
        *("--out", str(out / "release.csv"), "--report", str(out / "report.json")),
    ]
    popen = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with owned(popen) as process:
        stopped = wait_until(lambda: process.poll() is not None or _state(process.pid) == "T")
        assert stopped and process.poll() is None, "the command never opened its table"
        process.send_signal(signal.SIGTERM)
        err = stop_with(process, signal.SIGCONT).err
    assert process.returncode == 143, err
    assert err.splitlines() == ["fedanon: terminated"]
    assert list(out.iterdir()) == []
