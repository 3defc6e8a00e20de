"""The fault harness for a vertical DRBT session: a party frozen at each of its phases.

The leader ends the job within the phase's deadline (plus the abort and a margin), with one
line naming the party and the phase (the first party's id list used to end in a gRPC
traceback), writes nothing, and the next job runs on the same daemons once the frozen party
resumed and its lease lapsed.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fedanon.leader.federation import PartyFailure
from fedanon.leader.kinds.drbt import DRBTLeaderJob, run_drbt
from fedanon.leader.session import Session
from fedanon.leader.sim import Federation, federation, split_columns
from tests.distributed.conftest import status, wait_leases_lapsed, wait_until_stopped
from tests.drbt_vertical.harness import clustered_table

pytestmark = pytest.mark.slow

RPC_SECONDS = 3.0
LEASE_SECONDS = 3.0
# docs/distributed.md (Faults): 1 s for the calls' own errors, at most 3 s to abort; then a
# margin for a loaded machine.
LIMIT_SECONDS = RPC_SECONDS + 1.0 + 3.0 + 5.0


@pytest.fixture(scope="module")
def drbt_federation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Federation]:
    table, _ = clustered_table(m=300, d=9, seed=1)
    parts = split_columns(table, 3, "pid")
    workdir = tmp_path_factory.mktemp("drbt-faults")
    with federation(parts, None, secure=True, workdir=workdir, lease_seconds=LEASE_SECONDS) as fed:
        yield fed


def _job(fed: Federation, out: Path) -> DRBTLeaderJob:
    return DRBTLeaderJob(
        parties=fed.hops,
        tls=fed.leader_tls,
        out=out,
        id_column="pid",
        send_assignment=True,
        rpc_seconds=RPC_SECONDS,
    )


@pytest.mark.parametrize(
    ("victim", "phase"), [(0, "id list"), (1, "projection"), (2, "assignment")]
)
def test_frozen_drbt_party_is_named_within_the_deadline_and_the_next_job_runs(
    victim: int,
    phase: str,
    drbt_federation: Federation,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fed = drbt_federation
    process = fed.daemons[victim].process
    assert process is not None
    frozen: list[float] = []

    def freeze() -> None:
        if not frozen:
            os.kill(process.pid, signal.SIGSTOP)
            wait_until_stopped(process.pid)
            frozen.append(time.monotonic())

    handshake, fan_out = Session.handshake, Session.fan_out

    def then_freeze(self: Session, *args: Any) -> Any:
        opened = handshake(self, *args)
        if phase == "id list":  # the first party's id list is the next message
            freeze()
        return opened

    def freeze_before(self: Session, name: str, call: Any, *rest: Any) -> Any:
        if name == phase:
            freeze()
        return fan_out(self, name, call, *rest)

    out = tmp_path / "release.csv"
    try:
        with monkeypatch.context() as patched:
            patched.setattr(Session, "handshake", then_freeze)
            patched.setattr(Session, "fan_out", freeze_before)
            with pytest.raises(PartyFailure) as failure:
                run_drbt(_job(fed, out))
        elapsed = time.monotonic() - frozen[0]
    finally:
        os.kill(process.pid, signal.SIGCONT)
    message = str(failure.value)
    assert message.startswith(f"{phase}: party {fed.daemons[victim].name}:"), message
    assert elapsed < LIMIT_SECONDS, f"{message!r} took {elapsed:.1f} s"
    assert not out.exists()
    assert not wait_leases_lapsed(fed, [victim])  # it missed the abort while frozen, maybe
    report = run_drbt(_job(fed, out))
    assert report["objects"] == 300 and out.exists()
    assert all(status(fed, i).session_id == "" for i in range(3))
