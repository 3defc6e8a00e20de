"""The suite's session-end check: no process of this checkout outlives the test run.

A test that starts a daemon, a leader or a worker pool owns it on every exit path; a process
left behind (an orphan, re-parented to init) is a defect of the test or of the product (a pool
worker that outlived its killed daemon was one). Only processes started after the session began
are counted, and of those only processes of this run: every process the run starts inherits
its mark (``FEDANON_TEST_RUN`` in the environment) unless a test gives it an environment of its
own, so a process that carries the mark while its parent does not has left its starter (it was
re-parented to init, or to a sub-reaper such as a container's init), whatever program it runs
(a browser too); a process given its own environment counts when it is re-parented to init and
runs this checkout's code. Other engineers' processes on a shared machine and processes from
before the run are left out.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.harness.wait import wait_while

ROOT = str(Path(__file__).resolve().parents[1])
#: The environment variable that marks the processes of one test run (see :func:`mark_run`).
RUN_ENV = "FEDANON_TEST_RUN"


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


#: multiprocessing's process-wide helpers: one fork server and one resource tracker per process
#: that first needs them, started lazily and ended with that process.
MULTIPROCESSING_HELPERS = (
    "from multiprocessing.forkserver import main",
    "from multiprocessing.resource_tracker import main",
)


def mark_run() -> None:
    """Mark this process and what it starts as this run's (the xdist controller's mark, which
    its workers inherit, is kept)."""
    os.environ.setdefault(RUN_ENV, f"{os.getpid()}.{own_start()}")


def _marked(pid: str, mark: bytes) -> bool:
    try:
        return mark in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def orphans(since: int) -> list[str]:
    """Processes started at or after `since` that left the process that started them: this
    run's (marked, with an unmarked parent) or running this checkout's code with init as their
    parent, or still a child of this process; as "pid: command line". This process's own
    multiprocessing helpers (ended with it) are not counted."""
    found: list[str] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    mark = f"{RUN_ENV}={os.environ.get(RUN_ENV, '')}".encode()
    me = os.getpid()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        stat = _stat(entry.name)
        if stat is None or stat[1] < since or stat[2] == "Z":
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if stat[0] == me:  # still this process's child at the end of the run
            left = not any(helper in cmdline for helper in MULTIPROCESSING_HELPERS)
        elif _marked(entry.name, mark):
            left = not _marked(str(stat[0]), mark)
        else:
            left = stat[0] == 1 and ROOT in cmdline
        if left:
            found.append(f"{entry.name}: {cmdline.strip()[:200]}")
    return found


def wait_for_no_orphans(since: int, seconds: float = 60.0) -> list[str]:
    """The orphans left once `seconds` have passed (processes that are shutting down, such as a
    finished worker's fork server, get that long to exit)."""
    return wait_while(lambda: orphans(since), seconds, interval=0.5)
