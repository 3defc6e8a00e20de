"""A rerun without a party that dropped out is a fresh session over the same connections (#28):
the survivors see one TLS connection from the leader for the whole job, while the session, its
id and its keys are new.

Real daemons over mutual TLS; one is SIGKILLed after an iteration's secure sum (every party
opted in to exclusion), the job reruns among the others.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from fedanon.algorithms.tds.engine import StepInfo
from fedanon.leader.sim import Federation, federation, split_table
from tests.distributed.conftest import (
    LEASE_SECONDS,
    Dataset,
    hospital_dataset,
    kill_when,
    run_distributed,
)

PARTIES = 4
VICTIM = 3


@pytest.fixture(scope="module")
def data() -> Dataset:
    return hospital_dataset(1600, seed=11)


@pytest.fixture
def opted_in(data: Dataset, tmp_path: Path) -> Iterator[Federation]:
    with federation(
        split_table(data.table, PARTIES, "random", seed=3),
        data.taxonomy_path,
        lease_seconds=LEASE_SECONDS,
        policy="allow_exclusion = true",
        workdir=tmp_path / "fed",
    ) as fed:
        yield fed


def _leader_connections(ports: dict[int, str]) -> dict[str, set[int]]:
    """The local port of each TCP connection this process (the leader) holds to a daemon."""
    held: dict[str, set[int]] = defaultdict(set)
    for conn in psutil.Process().net_connections(kind="tcp"):
        if conn.raddr and conn.raddr.port in ports and conn.status == psutil.CONN_ESTABLISHED:
            held[ports[conn.raddr.port]].add(conn.laddr.port)
    return held


def test_the_rerun_reaches_the_survivors_over_the_first_attempts_connections(
    opted_in: Federation, data: Dataset, tmp_path: Path
) -> None:
    ports = {int(d.address.rpartition(":")[2]): d.name for d in opted_in.daemons}
    killer = kill_when(opted_in, VICTIM, 2)
    seen: dict[str, set[int]] = defaultdict(set)
    steps: list[int] = []

    def on_step(step: StepInfo) -> None:
        steps.append(step.iteration)
        for name, local in _leader_connections(ports).items():
            seen[name] |= local
        killer(step)

    report = run_distributed(
        opted_in.hops,
        opted_in.leader_tls,
        data,
        data.spec(L=2, K=8, C="0.6"),
        tmp_path / "out.csv",
        on_step=on_step,
        sum_mode="pairwise",
        union_mode="shuffle",
    )
    assert report["excluded"] == ["hospital-4"] and report["attempts"] == 2
    assert steps.count(1) == 2  # both attempts' iterations were watched
    survivors = ["hospital-1", "hospital-2", "hospital-3"]
    # One connection (one TLS handshake) per survivor across both sessions; before, the
    # rerun's session dialled every survivor again (two local ports each).
    assert {name: len(seen[name]) for name in survivors} == dict.fromkeys(survivors, 1)
    assert _leader_connections(ports) == {}  # the job closed them at its end
