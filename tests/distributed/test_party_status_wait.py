"""``fedanon party status --wait``: scripts that start daemons wait for readiness, not a sleep.

Run as a real command against a real daemon of the shared federation, stopped for the test:
the wait ends as soon as the daemon (started after the command) answers; without a daemon it
ends after the given seconds with one line naming the party.
"""

from __future__ import annotations

import subprocess
import time

from fedanon.leader.sim import Federation
from tests.distributed.test_faults import ensure_running
from tests.harness.cli import FEDANON


def _status(fed: Federation, *wait: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *FEDANON,
            *("party", "status"),
            *("--config", str(fed.daemons[0].config), *wait),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_status_wait_returns_once_the_daemon_answers_and_fails_in_one_line_without_it(
    hospital_federation: Federation,
) -> None:
    fed = hospital_federation
    daemon = fed.daemons[0]
    try:
        fed.stop(daemon)
        began = time.monotonic()
        absent = _status(fed, "--wait", "1.5")
        out, err = absent.communicate(timeout=60)
        assert absent.returncode != 0, out
        assert len(err.strip().splitlines()) == 1, err
        assert err.startswith("fedanon: error: party hospital-1 at 127.0.0.1:"), err
        assert "waited 1.5 s" in err
        assert 1.5 <= time.monotonic() - began < 30

        waiting = _status(fed, "--wait")  # the default: 60 s
        try:
            time.sleep(1.0)  # the command has started asking and found nobody yet
            assert waiting.poll() is None, waiting.communicate()
            fed.start(daemon)
            out, err = waiting.communicate(timeout=90)
        finally:
            waiting.kill()
        assert waiting.returncode == 0, err
        assert "hospital-1" in out and "serving" in out
    finally:
        ensure_running(fed)


def test_status_wait_refuses_a_bad_value_in_one_line(hospital_federation: Federation) -> None:
    for value in ("0", "-3", "soon", "nan"):
        done = _status(hospital_federation, "--wait", value)
        out, err = done.communicate(timeout=60)
        assert done.returncode == 2, (value, out, err)
        assert err.strip() == (
            f"fedanon: error: --wait must be a number of seconds above 0 and at most 86400, "
            f"got '{value}'"
        ), err
