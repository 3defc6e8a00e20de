"""Only the ring predecessor may send a party its Sum or its union STRIP hop.

With the leader's certificate, a mid-ring Sum carrying a zero partial sum would come back with
that party's statistics plus the rest of the ring (sealed to the leader, who can open it); two
such calls (at party i and at party i+1) give party i's exact vector. Likewise a STRIP from the
leader would let it skip hops of the union. Both are refused before any session state is
touched, mid-session, and the session then finishes equal to the centralized release.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from fedanon.algorithms.tds.engine import StepInfo
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_channel
from fedanon.leader.sim import split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from tests.distributed.conftest import (
    Dataset,
    assert_same_release,
    centralized,
    hospital_dataset,
    run_distributed,
)
from tests.distributed.recording import recording_federation


def _call(address: str, name: str, tls: TLSFiles, method: str, request: object) -> grpc.RpcError:
    """Call `method` at a party with `tls` and return the error it must end with."""
    channel = make_channel(address, name, tls)
    try:
        with pytest.raises(grpc.RpcError) as refused:
            getattr(pb_grpc.PartyStub(channel), method)(request, timeout=10)
        return refused.value
    finally:
        channel.close()


@pytest.fixture(scope="module")
def small_data() -> Dataset:
    return hospital_dataset(900, seed=3)


def test_leader_may_not_call_a_mid_ring_sum_or_skip_union_hops(
    small_data: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = split_table(small_data.table, 3, "random", seed=2)
    refusals: dict[str, grpc.RpcError] = {}
    resumed: dict[str, grpc.RpcError] = {}
    with recording_federation(parts, small_data.taxonomy_path, tmp_path, monkeypatch) as fed:
        hops = fed.hops

        def on_step(step: StepInfo) -> None:
            if step.iteration != 2 or refusals:
                return
            sid = fed.log.of(role=hops[0].name, method="Sum", kind="request")[
                -1
            ].message.ref.session_id
            served = fed.log.of(role=hops[1].name, method="Sum", kind="request")
            genuine = served[-1].message  # what hospital-2 got from hospital-1 at iteration 2
            zero = pb.Vector(
                data=bytes(genuine.partial.length * 8), length=genuine.partial.length, dtype="<u8"
            )
            for index in (1, 2):
                for iteration in (2, 3):  # a copy of the last hop, and the next one
                    probe = pb.SumRequest(
                        ref=pb.SessionRef(session_id=sid, iteration=iteration),
                        partial=zero,
                        instruction=genuine.instruction,
                    )
                    refusals[f"Sum {hops[index].name} {iteration}"] = _call(
                        hops[index].address, hops[index].name, fed.leader_tls, "Sum", probe
                    )
                refusals[f"Union STRIP {hops[index].name}"] = _call(
                    hops[index].address,
                    hops[index].name,
                    fed.leader_tls,
                    "Union",
                    pb.UnionRequest(
                        ref=pb.SessionRef(session_id=sid, iteration=3),
                        phase=pb.UNION_PHASE_STRIP,
                        packed=bytes(200),
                        item_size=200,
                        record_size=64,
                    ),
                )
                # A resumed strip (the leader's, after a rejoin) forwards only a batch the hop
                # peeled in the round, and carries nothing: before the union there is none.
                for packed in (b"", bytes(200)):
                    resumed[f"{hops[index].name} {len(packed)}"] = _call(
                        hops[index].address,
                        hops[index].name,
                        fed.leader_tls,
                        "Union",
                        pb.UnionRequest(
                            ref=pb.SessionRef(session_id=sid, iteration=2),
                            phase=pb.UNION_PHASE_STRIP,
                            packed=packed,
                            item_size=200 if packed else 0,
                            record_size=64,
                            forward_kept=True,
                        ),
                    )

        spec = small_data.spec(L=2, K=15, C="0.3")
        out = tmp_path / "release.csv"
        report = run_distributed(hops, fed.leader_tls, small_data, spec, out, on_step=on_step)
        assert_same_release(out, report, centralized(small_data, spec))
    assert len(refusals) == 6
    for label, error in refusals.items():
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED, (label, error.details())
        details = error.details() or ""
        assert "caller 'leader' (leader) may not send this message" in details, label
    assert len(resumed) == 4
    for label, error in resumed.items():
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION, (label, error.details())
        assert "union: " in (error.details() or ""), label
