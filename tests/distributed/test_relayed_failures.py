"""A failure relayed from further down the ring is final: never retried, and named right.

The middle party's next hop (the last party) becomes unreachable mid-session. The middle party
retries its own forward (the next hop itself is unavailable), then relays the failure, which
names the last party; the first party must not retry that relayed failure: before, it did, the
middle party re-ran its step for every copy (the union strip: the whole downstream strip each
time, 46 s in all) and the copy of a Sum was refused as "stale", blaming the middle party. The
recorder counts what each party served.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest

import fedanon.leader.union
from fedanon.algorithms.tds.engine import StepInfo
from fedanon.leader.federation import PartyFailure
from fedanon.leader.sim import free_ports, split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from tests.distributed.conftest import Dataset, hospital_dataset, run_distributed
from tests.distributed.recording import RecordingFederation, recording_federation


@pytest.fixture(scope="module")
def small_data() -> Dataset:
    return hospital_dataset(900, seed=3)


def _cut_off_last_party(fed: RecordingFederation) -> None:
    """From now on the middle party's next hop is a port nobody listens on."""
    (port,) = free_ports(1)
    stub = pb_grpc.PartyStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
    fed.servicers[fed.hops[1].name].next_stub = lambda: stub


def _served(fed: RecordingFederation, party: int, method: str, strip: bool) -> int:
    requests = fed.log.of(role=fed.hops[party].name, method=method, kind="request")
    if strip:
        requests = [r for r in requests if r.message.phase == pb.UNION_PHASE_STRIP]
    return len(requests)


# Both phases relay the same way; [union (strip)] waits longer and is left to the full suite.
@pytest.mark.parametrize(
    "phase", ["secure sum, iteration 3", pytest.param("union (strip)", marks=pytest.mark.slow)]
)
def test_a_relayed_failure_is_not_retried_and_names_the_last_party(
    small_data: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, phase: str
) -> None:
    parts = split_table(small_data.table, 3, "random", seed=2)
    with recording_federation(parts, small_data.taxonomy_path, tmp_path, monkeypatch) as fed:
        counted: dict[str, int] = {}

        def on_step(step: StepInfo) -> None:
            if phase.startswith("secure sum") and step.iteration == 2:
                counted["before"] = _served(fed, 1, "Sum", strip=False)
                _cut_off_last_party(fed)

        ring_call = fedanon.leader.union._ring_call

        def strip(*args: Any, **kwargs: Any) -> Any:
            counted["before"] = 0
            _cut_off_last_party(fed)
            return ring_call(*args, **kwargs)

        if phase == "union (strip)":
            monkeypatch.setattr(fedanon.leader.union, "_ring_call", strip)
        with pytest.raises(PartyFailure) as failure:
            run_distributed(
                fed.hops,
                fed.leader_tls,
                small_data,
                small_data.spec(L=2, K=15, C="0.3"),
                tmp_path / "release.csv",
                on_step=on_step,
                rpc_seconds=20.0,
            )
        message = str(failure.value)
        assert message.startswith(f"{phase}: party hospital-3:"), message
        assert "forwarded by hospital-2" in message, message
        method, is_strip = ("Union", True) if phase == "union (strip)" else ("Sum", False)
        # One request reached the middle party in the failed step: no copy from the first.
        assert _served(fed, 1, method, is_strip) - counted["before"] == 1
