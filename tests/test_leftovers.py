"""The session-end check (tests/leftovers.py) finds a process of this run left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.harness.cli import owned
from tests.harness.wait import wait_until
from tests.leftovers import ROOT, RUN_ENV, orphans, own_start

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)", ROOT]
SHELL_SLEEP = " ".join(f"'{part}'" for part in SLEEPER)


def _found(pid: int, since: int) -> bool:
    return any(line.startswith(f"{pid}: ") for line in orphans(since))


def _gone(pid: int, since: int) -> None:
    """SIGKILL takes effect asynchronously; once dead (a zombie until reaped) it is gone."""
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not _found(pid, since)), f"killed process {pid} still counted"


def test_an_orphan_and_a_child_of_this_process_are_found_a_grandchild_is_not() -> None:
    """An orphan (re-parented to init) and a child still attached to the process that checks
    at the end of the run are left behind; a process whose parent of this run lives is not."""
    since = own_start()
    spawned = subprocess.run(  # the shell exits at once: its sleeper is re-parented to init
        ["sh", "-c", f"{SHELL_SLEEP} >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
    )
    orphan = int(spawned.stdout)
    try:
        with (
            owned(subprocess.Popen(SLEEPER, text=True)) as child,
            owned(
                subprocess.Popen(
                    ["sh", "-c", f"{SHELL_SLEEP} & echo $!; wait"],
                    stdout=subprocess.PIPE,
                    text=True,
                )
            ) as parent,
        ):
            assert parent.stdout is not None
            grandchild = int(parent.stdout.readline())
            try:
                assert _found(orphan, since)
                assert _found(child.pid, since)
                assert not _found(grandchild, since)
            finally:
                os.kill(grandchild, signal.SIGKILL)
    finally:
        _gone(orphan, since)


def test_a_process_of_this_run_found_whatever_it_runs_and_whoever_adopted_it() -> None:
    """A process of this run (its mark in the environment) that left its starter counts even
    when it runs no code of this checkout (`sleep`, a browser) and when a sub-reaper (a
    container's init), not init, adopted it: the check looked only for pid 1 and this
    checkout's path in the command line."""
    since = own_start()
    reaper = (  # an unmarked sub-reaper that starts a marked `sleep` through a shell that exits
        "import ctypes, os, subprocess, sys, time\n"
        "ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)\n"  # PR_SET_CHILD_SUBREAPER
        "env = {**os.environ, sys.argv[1]: sys.argv[2]}\n"
        "out = subprocess.run(['sh', '-c', 'sleep 120 >/dev/null 2>&1 & echo $!'],\n"
        "                     env=env, capture_output=True, text=True, check=True).stdout\n"
        "print(out.strip(), flush=True)\n"
        "time.sleep(120)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != RUN_ENV}
    command = [sys.executable, "-c", reaper, RUN_ENV, os.environ[RUN_ENV]]
    with owned(subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)) as sub:
        assert sub.stdout is not None
        sleeper = int(sub.stdout.readline())
        try:
            assert _found(sleeper, since)
        finally:
            os.kill(sleeper, signal.SIGKILL)
