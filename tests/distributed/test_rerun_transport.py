"""A rerun without a party that dropped out is a fresh session over the same connections (#28):
the survivors see one TLS connection from the leader for the whole job, while the session, its
id and its keys are new.

Real daemons over mutual TLS; one is SIGKILLed after an iteration's secure sum (every party
opted in to exclusion), the job reruns among the others.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

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


def _own_sockets() -> set[str]:
    """The inodes of this process's open sockets (/proc/self/fd)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if link.startswith("socket:["):
            inodes.add(link[len("socket:[") : -1])
    return inodes


def _leader_connections(ports: dict[int, str]) -> dict[str, set[int]]:
    """The local port of each established TCP connection this process (the leader) holds to
    a daemon (by the daemon's port), from the kernel's tables of TCP sockets."""
    mine = _own_sockets()
    held: dict[str, set[int]] = defaultdict(set)
    lines = [
        line
        for table in ("/proc/net/tcp", "/proc/net/tcp6")  # gRPC dials 127.0.0.1 over either
        for line in Path(table).read_text().splitlines()[1:]
    ]
    for line in lines:
        fields = line.split()
        local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
        remote_port = int(remote.rpartition(":")[2], 16)
        if state == "01" and inode in mine and remote_port in ports:  # 01: ESTABLISHED
            held[ports[remote_port]].add(int(local.rpartition(":")[2], 16))
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
    # Both attempts' iterations were watched: the first's up to the kill, then the rerun's
    # after the prefix it resumed from (docs/distributed.md, "Exclusion").
    assert steps[:2] == [1, 2] and len(steps) > 2
    survivors = ["hospital-1", "hospital-2", "hospital-3"]
    # One connection (one TLS handshake) per survivor across both sessions; before, the
    # rerun's session dialled every survivor again (two local ports each).
    assert {name: len(seen[name]) for name in survivors} == dict.fromkeys(survivors, 1)
    assert _leader_connections(ports) == {}  # the job closed them at its end
