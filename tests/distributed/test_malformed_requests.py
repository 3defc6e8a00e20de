"""Malformed, stale and replayed messages from AUTHORIZED peers (issue #22, defect 5), against
real daemons with mutual TLS.

The rule (docs/distributed.md, "Refusals and failures"): bytes that are not a valid message are
``INVALID_ARGUMENT``; a message that is not the open session's next one (stale, replayed, out
of order) is ``FAILED_PRECONDITION``. Either way the party logs one line, no traceback, and
changes nothing: ``Status`` (session, iteration, last error, sessions served) reads the same,
and the session then finishes with the centralized release.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf.message import Message

from fedanon.algorithms.tds.engine import StepInfo
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_channel
from fedanon.leader.sim import Federation, federation, split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.distributed.conftest import (
    Dataset,
    assert_same_release,
    centralized,
    hospital_dataset,
    run_distributed,
    status,
    steady_status,
)

METHODS = [
    "OpenSession",
    "ShareKeys",
    "Sum",
    "Union",
    "Ids",
    "Project",
    "Assign",
    "Randomize",
    "C45Count",
    "KactusStep",
    "EvaluateClassify",
    "Renew",
    "End",
    "Status",
]
# Not a protobuf message: field 31 with wire type 7, which does not exist.
UNPARSEABLE = b"\xff\x01\x02"
# A well-formed encoding of a field number no request defines (field 2000, varint 1).
UNKNOWN_FIELD = b"\x80\x7d\x01"


@pytest.fixture(scope="module")
def data() -> Dataset:
    return hospital_dataset(900, seed=13)


@pytest.fixture(scope="module")
def fed(data: Dataset) -> Iterator[Federation]:
    parts = split_table(data.table, 3, "random", seed=3)
    with federation(parts, data.taxonomy_path, secure=True, lease_seconds=30.0) as started:
        yield started


def _log(fed: Federation, index: int) -> str:
    return fed.daemons[index].log.read_text(encoding="utf-8", errors="replace")


def _raw_call(
    fed: Federation, index: int, tls: TLSFiles | None, method: str, raw: bytes
) -> grpc.RpcError:
    """Send `raw` as the request of `method` (identity serializers: the bytes as they are)."""
    daemon = fed.daemons[index]
    channel = make_channel(daemon.address, daemon.name, tls)
    try:
        call = channel.unary_unary(f"/fedanon.v1.Party/{method}")
        with pytest.raises(grpc.RpcError) as refused:
            call(raw, timeout=15)
        return refused.value
    finally:
        channel.close()


def _call(
    fed: Federation, index: int, tls: TLSFiles | None, method: str, request: Message
) -> grpc.RpcError:
    return _raw_call(fed, index, tls, method, request.SerializeToString())


def _party_tls(fed: Federation, name: str) -> TLSFiles:
    certs = fed.cert_dir
    return TLSFiles(certs / "ca.crt", certs / f"{name}.crt", certs / f"{name}.key")


def _refused_quietly(
    fed: Federation,
    index: int,
    send: Callable[[], grpc.RpcError],
    code: grpc.StatusCode,
    needle: str,
) -> str:
    """Send one message; assert its code, one log line naming it, no traceback, same Status."""
    before, log_before = steady_status(fed, index), _log(fed, index)
    error = send()
    details = error.details() or ""
    assert error.code() == code, (error.code(), details)
    assert needle in details and "\n" not in details, details
    new = _log(fed, index)[len(log_before) :]
    assert "Traceback" not in new and "Exception calling application" not in new, new
    assert sum(needle in line for line in new.splitlines()) == 1, new
    assert steady_status(fed, index) == before
    return details


@pytest.mark.parametrize("raw", [UNPARSEABLE, UNKNOWN_FIELD], ids=["unparseable", "unknown-field"])
@pytest.mark.parametrize("method", METHODS)
def test_bytes_that_are_no_valid_message_are_invalid_argument(
    fed: Federation, method: str, raw: bytes
) -> None:
    details = _refused_quietly(
        fed,
        1,
        lambda: _raw_call(fed, 1, fed.leader_tls, method, raw),
        grpc.StatusCode.INVALID_ARGUMENT,
        f"{method} refused: the request is not a valid message",
    )
    assert details.startswith("party hospital-2: ")


@pytest.mark.parametrize(
    ("method", "request_"),
    [
        ("Union", pb.UnionRequest(phase=99)),  # type: ignore[arg-type]
        ("Union", pb.UnionRequest(phase=pb.UNION_PHASE_FETCH, fetch_phase=42)),  # type: ignore[arg-type]
        ("OpenSession", pb.OpenSessionRequest(sum_mode=7, lkc=pb.LKCJob(L=2))),  # type: ignore[arg-type]
    ],
    ids=["union-phase", "fetch-phase", "sum-mode"],
)
def test_an_enum_value_no_version_defines_is_invalid_argument(
    fed: Federation, method: str, request_: Message
) -> None:
    _refused_quietly(
        fed,
        1,
        lambda: _call(fed, 1, fed.leader_tls, method, request_),
        grpc.StatusCode.INVALID_ARGUMENT,
        f"{method} refused: the request is not a valid message",
    )


@pytest.mark.parametrize(
    ("packed", "item_size"),
    [(b"\x01" * 7, 2), (b"\x01" * 64, 0), (b"\x01" * 371, 370)],
    ids=["not-a-multiple", "no-item-size", "one-byte-over"],
)
@pytest.mark.parametrize("phase", [pb.UNION_PHASE_STRIP, pb.UNION_PHASE_SHUFFLE_STEP])
def test_union_items_that_cut_into_no_whole_items_are_invalid_argument(
    fed: Federation, phase: int, packed: bytes, item_size: int
) -> None:
    """A union message's items travel packed (`packed`, `item_size`): bytes that are no whole
    number of items are no valid message, refused before any session state is read."""
    request = pb.UnionRequest(phase=phase, packed=packed, item_size=item_size, chunks=1)  # type: ignore[arg-type]
    details = _refused_quietly(
        fed,
        1,
        lambda: _call(fed, 1, fed.leader_tls, "Union", request),
        grpc.StatusCode.INVALID_ARGUMENT,
        "Union refused: the request is not a valid message",
    )
    assert "not a whole number of" in details and f"{item_size}-byte items" in details


def test_stale_and_replayed_messages_change_nothing_mid_session(
    fed: Federation, data: Dataset, tmp_path: Path
) -> None:
    """At iteration 2 of a ring job, stale, future and replayed messages for every stateful
    ring method are refused by the party they reach; the job then completes unchanged."""
    outcomes: list[str] = []

    def on_step(step: StepInfo) -> None:
        if step.iteration != 2 or outcomes:
            return
        current = status(fed, 0)
        sid, now = current.session_id, current.iteration
        zero = pb.Vector(data=bytes(8), length=1, dtype="<u8")
        probes = {
            "stale Sum": (pb.SumRequest(ref=pb.SessionRef(session_id=sid), partial=zero), "Sum"),
            "future Sum": (
                pb.SumRequest(ref=pb.SessionRef(session_id=sid, iteration=now + 5), partial=zero),
                "Sum",
            ),
            "stale Union": (
                pb.UnionRequest(
                    ref=pb.SessionRef(session_id=sid, iteration=0),
                    phase=pb.UNION_PHASE_MEASURE,
                ),
                "Union",
            ),
            "early fetch": (
                pb.UnionRequest(
                    ref=pb.SessionRef(session_id=sid, iteration=now),
                    phase=pb.UNION_PHASE_FETCH,
                    fetch_phase=pb.UNION_PHASE_STRIP,
                ),
                "Union",
            ),
            "replayed ShareKeys": (
                pb.ShareKeysRequest(ref=pb.SessionRef(session_id=sid)),
                "ShareKeys",
            ),
        }
        needles = {
            "stale Sum": "stale or out-of-order iteration 0",
            "future Sum": f"stale or out-of-order iteration {now + 5}",
            "stale Union": "stale or out-of-order iteration 0",
            "early fetch": "no union output of phase",
            "replayed ShareKeys": "key shares were already accepted",
        }
        for label, (request, method) in probes.items():
            send = functools.partial(_call, fed, 0, fed.leader_tls, method, request)
            outcomes.append(
                _refused_quietly(fed, 0, send, grpc.StatusCode.FAILED_PRECONDITION, needles[label])
            )

    spec = data.spec(L=2, K=15, C="0.3")
    out = tmp_path / "release.csv"
    report = run_distributed(fed.hops, fed.leader_tls, data, spec, out, on_step=on_step)
    assert len(outcomes) == 5
    assert_same_release(out, report, centralized(data, spec))


def test_ring_predecessor_may_not_call_sum_in_pairwise_mode(
    fed: Federation, data: Dataset, tmp_path: Path
) -> None:
    """In pairwise mode only the leader sends Sum (the predecessor still forwards the union's
    STRIP, so the gate lets it through): hospital-1 calling hospital-2's Sum is refused."""
    refusals: list[str] = []

    def on_step(step: StepInfo) -> None:
        if step.iteration != 1 or refusals:
            return
        current = status(fed, 1)
        probe = pb.SumRequest(
            ref=pb.SessionRef(session_id=current.session_id, iteration=current.iteration)
        )
        refusals.append(
            _refused_quietly(
                fed,
                1,
                lambda: _call(fed, 1, _party_tls(fed, "hospital-1"), "Sum", probe),
                grpc.StatusCode.PERMISSION_DENIED,
                "caller 'hospital-1' (party) may not send this message",
            )
        )

    spec = data.spec(L=2, K=15, C="0.3")
    out = tmp_path / "release.csv"
    report = run_distributed(
        fed.hops, fed.leader_tls, data, spec, out, on_step=on_step, sum_mode="pairwise"
    )
    assert len(refusals) == 1
    assert_same_release(out, report, centralized(data, spec))
