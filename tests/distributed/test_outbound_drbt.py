"""A vertical DRBT job gives the same release over the relay as over direct connections.

Each DRBT party projects its block with a fresh secret matrix (``secure_rng``), so two runs
never release the same numbers. Here every daemon (a real ``fedanon party serve`` process,
mutual TLS, loopback) draws its matrix from one fixed seed instead, and the leader's K-means
takes a fixed seed: then the release (projected values and clusters, as a multiset of rows; the
row order and the tokens stay secret and random) must be the same in direct and in outbound
mode, byte for byte, and no outbound party listens on a port.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from fedanon.federation.config import DIE_WITH_PARENT, TRANSPORTS
from fedanon.leader.kinds.drbt import DRBTLeaderJob, run_drbt
from fedanon.leader.sim import Daemon, Federation, federation, split_columns
from tests.distributed.conftest import rows
from tests.distributed.test_outbound import listening_ports
from tests.drbt_vertical.harness import clustered_table

pytestmark = pytest.mark.slow

OBJECTS = 200
# The daemon's matrices from a fixed seed (this test's only change), then `party serve`.
FIXED_MATRIX = (
    "import numpy as np\n"
    "from fedanon.algorithms.drbt import matrices\n"
    "matrices.secure_rng = lambda seed=None: np.random.default_rng(2026)\n"
    "import sys\nfrom fedanon.cli.main import main\n"
)


def start_fixed(fed: Federation, daemon: Daemon) -> None:
    """`Federation.start`, the daemon drawing its projection matrix from a fixed seed."""
    code = FIXED_MATRIX + f"sys.exit(main(['party', 'serve', '--config', {str(daemon.config)!r}]))"
    with daemon.log.open("ab") as log:
        daemon.process = subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1", DIE_WITH_PARENT: str(os.getpid())},
        )


@pytest.fixture(scope="module")
def fixed_federations() -> Iterator[dict[str, Federation]]:
    """The same vertical split served twice, direct and outbound, by fixed-matrix daemons."""
    table, _ = clustered_table(m=OBJECTS, d=9, seed=3)
    parts = split_columns(table, 3, "pid")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Federation, "start", start_fixed)
        feds = {}
        with federation(parts, None, transport="direct") as direct:
            feds["direct"] = direct
            with federation(parts, None, transport="outbound") as outbound:
                feds["outbound"] = outbound
                yield feds


def test_drbt_release_is_the_same_direct_and_outbound(
    fixed_federations: dict[str, Federation], tmp_path: Path
) -> None:
    released = {}
    for transport in TRANSPORTS:
        fed = fixed_federations[transport]
        out = tmp_path / f"{transport}.csv"
        job = DRBTLeaderJob(
            parties=fed.hops,
            tls=fed.leader_tls,
            out=out,
            id_column="pid",
            clusters=3,
            send_assignment=True,
            rpc_seconds=60,
            relay_listen=fed.relay_listen,
            seed=7,
        )
        report = run_drbt(job)
        assert report["objects"] == OBJECTS
        table = pd.read_csv(out, dtype=str, keep_default_na=False)
        assert len(set(table["token"])) == OBJECTS
        released[transport] = rows(table.drop(columns=["token"]))
    assert released["direct"] == released["outbound"]
    # Not equal by being empty or constant: 200 distinct projected objects, 3 clusters.
    assert len(released["direct"]) == OBJECTS
    assert {row[-1] for row in released["direct"]} == {"0", "1", "2"}
    for daemon in fixed_federations["outbound"].daemons:
        assert listening_ports(daemon.process.pid) == set()  # type: ignore[union-attr]
