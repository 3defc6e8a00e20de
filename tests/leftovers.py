"""The suite's session-end check: no process of this checkout outlives the test run.

A test that starts a daemon, a leader or a worker pool owns it on every exit path; a process
left behind (an orphan, re-parented to init) is a defect of the test or of the product (a pool
worker that outlived its killed daemon was one). Only processes started after the session began
and running this checkout's code are counted, so other engineers' processes on a shared machine
and processes from before the run are left out.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])


def _stat(pid: str) -> tuple[int, int, str] | None:
    """(parent pid, start time in clock ticks since boot, state) of `pid`, None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), int(fields[19]), fields[0]


def own_start() -> int:
    """This process's start time, in clock ticks since boot (0 where /proc is not there)."""
    found = _stat(str(os.getpid()))
    return found[1] if found else 0


def orphans(since: int) -> list[str]:
    """Processes running this checkout's code, started at or after `since`, whose parent is
    gone (re-parented to init), as "pid: command line"."""
    found: list[str] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(entry.name)
        if stat is None or stat[0] != 1 or stat[1] < since or stat[2] == "Z":
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if ROOT in cmdline:
            found.append(f"{entry.name}: {cmdline.strip()[:200]}")
    return found


def wait_for_no_orphans(since: int, seconds: float = 60.0) -> list[str]:
    """The orphans left once `seconds` have passed (processes that are shutting down, such as a
    finished worker's fork server, get that long to exit)."""
    deadline = time.monotonic() + seconds
    while (left := orphans(since)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left
