"""The union bench counts the CPU of processes a run leaves behind (bench/bench_union_modes.py).

The leader's union workers come from a fork server that the leader never waits for: when the
leader exits, the fork server is reparented, so its CPU (and its reaped workers') reached no
``RUSAGE_CHILDREN`` of the bench, and the layered run's "CPU (all processes)" left out the
leader's whole opening. The bench now makes itself a subreaper and waits for such orphans. The
check runs in a child interpreter, so that this test process never becomes a subreaper.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# A child that starts a grandchild burning about 0.3 s of CPU and exits at once (what the
# leader does to its fork server); the script measures what each accounting sees.
_SCRIPT = textwrap.dedent(
    """
    import resource, subprocess, sys
    sys.path.insert(0, sys.argv[1])
    from bench_union_modes import become_subreaper, reap_orphans

    BURN = "import time; t = time.process_time()\\nwhile time.process_time() - t < 0.3: pass"
    LEAVE = "import subprocess, sys; subprocess.Popen([sys.executable, '-c', sys.argv[1]])"

    def children() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    assert become_subreaper()
    before = children()
    subprocess.run([sys.executable, "-c", LEAVE, BURN], check=True)
    direct = children() - before
    orphans = reap_orphans(set())
    print(f"{direct:.3f} {orphans:.3f}")
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="a subreaper is a Linux feature")
def test_the_cpu_of_a_run_s_orphaned_workers_is_counted() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(REPO / "bench")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    direct, orphans = map(float, done.stdout.split())
    assert direct < 0.2  # the child alone: the grandchild's burn is not in its rusage
    assert orphans >= 0.28  # the adopted grandchild's 0.3 s of CPU, counted once it exited
