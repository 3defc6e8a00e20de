"""The Dask engine's local cluster against a careless operator's Dask environment (session 13
review, h-review2).

``DASK_*`` environment variables set for a site's own Dask cluster reach every cluster the
daemon's process starts. Those that move where a cluster listens or is reached must not move
fedanon's local cluster: it starts, computes, and listens on loopback only, not on 8787.
A scheduler contact address (``DASK_DISTRIBUTED__SCHEDULER__CONTACT_ADDRESS``) sent the local
workers to that address: an in-process cluster never started (the daemon's first LKC job hung).
Each case runs in a fresh interpreter, where Dask reads the environment as a daemon's does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The variables a careless operator left set (each a Dask configuration key).
CARELESS = {
    "DASK_DISTRIBUTED__SCHEDULER__CONTACT_ADDRESS": "tcp://0.0.0.0:9",
    "DASK_DISTRIBUTED__SCHEDULER__DASHBOARD__ADDRESS": ":8787",
    "DASK_SCHEDULER_ADDRESS": "tcp://0.0.0.0:8786",
    "DASK_DISTRIBUTED__COMM__DEFAULT_SCHEME": "tcp",
}

#: Starts the engine's cluster, computes on it, prints what it listens on that is not loopback.
PROGRAM = """
import os
from distributed import Client
from fedanon.algorithms.tds.engines.sharded import local_cluster
from tests.lkc.test_dask_ports import DASHBOARD_PORT, _is_loopback, listening_sockets
with local_cluster({workers}, shards=2) as cluster, Client(cluster) as client:
    client.wait_for_workers(1, timeout=30)
    assert client.submit(sum, [1, 2, 3]).result(timeout=30) == 6
    opened = listening_sockets(os.getpid())
print("public", [a for a in opened if not _is_loopback(a[0]) or a[1] == DASHBOARD_PORT])
"""


@pytest.mark.parametrize("workers", [0, 1], ids=["in-process", "processes"])
def test_a_careless_dask_environment_never_moves_the_local_cluster(workers: int) -> None:
    env = {**os.environ, **CARELESS, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROGRAM.format(workers=workers)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the local cluster never started under the operator's Dask environment")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "public []"
