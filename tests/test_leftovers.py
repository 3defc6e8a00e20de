"""The session-end check (tests/leftovers.py) finds a process of this checkout left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.leftovers import ROOT, orphans, own_start


def test_an_orphan_running_this_checkout_is_found_and_a_child_is_not() -> None:
    since = own_start()
    sleeper = [sys.executable, "-c", "import time; time.sleep(120)", ROOT]
    child = subprocess.Popen(sleeper)  # its parent (this test) lives: not left behind
    spawned = subprocess.run(  # the shell exits at once: its sleeper is re-parented to init
        ["sh", "-c", " ".join(f"'{part}'" for part in sleeper) + " >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
    )
    orphan = int(spawned.stdout)
    try:
        found = orphans(since)
        assert any(line.startswith(f"{orphan}: ") for line in found), found
        assert not any(line.startswith(f"{child.pid}: ") for line in found), found
    finally:
        os.kill(orphan, signal.SIGKILL)
        child.kill()
        child.wait()
    # SIGKILL takes effect asynchronously; once dead (a zombie until init reaps it) it is gone.
    deadline = time.monotonic() + 30
    while any(line.startswith(f"{orphan}: ") for line in orphans(since)):
        assert time.monotonic() < deadline, "a killed orphan still counted after 30 s"
        time.sleep(0.05)
