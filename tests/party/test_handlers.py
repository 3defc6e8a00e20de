"""The party's job handlers, ring steps, secure-sum protocols and gate, in-process with a fake
shell: what the servicer gives a handler (party/handler.py's ``PartyShell``) and nothing else.

The daemon tests (tests/distributed, tests/drbt_vertical, tests/randomization) run the same code
through gRPC; these run in well under a second each, so the quick subset imports every handler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import grpc
import numpy as np
import pandas as pd
import pytest
from cryptography import x509

import fedanon.party.gate
from fedanon.algorithms.randomization.jobspec import RandomizeSpec
from fedanon.algorithms.tds.engines.base import CountingEngine
from fedanon.crypto.identity import Identity
from fedanon.crypto.idle_keys import IdleKeyWorkers
from fedanon.crypto.keyshare import ONION_UNION
from fedanon.crypto.onion_union import build_route
from fedanon.crypto.sealed_total import SealedTotalChannel
from fedanon.federation.config import Hop
from fedanon.federation.drbt_job import drbt_job_to_proto
from fedanon.federation.keyshares import new_share, verified_peers
from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.federation.randomize_job import spec_to_proto
from fedanon.federation.wire import from_vector
from fedanon.leader.kinds.lkc import spec_from_table
from fedanon.party import ring
from fedanon.party.config import PartyConfig
from fedanon.party.gate import RETURN_MEMORY_FROM, PartyGate
from fedanon.party.handlers import HANDLERS
from fedanon.party.handlers.lkc_session import LKCSession
from fedanon.party.shell import ForwardStub
from fedanon.party.sums import PairwiseSum, RingSum, SumProtocol
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from fedanon.readers.sources import FrameSource, TableSource
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.loader import load_taxonomy

SESSION = "ab" * 16
LEADER = "leader"


class Refused(Exception):
    """What the fake shell raises where the servicer would abort the call."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code


class FakeContext:
    """The call's context as the replay guard reads it after a failure."""

    def code(self) -> None:
        return None

    def details(self) -> str:
        return ""


def _forwarded_in_process() -> pb_grpc.PartyStub:
    raise AssertionError("the fake shell forwards through _forward, not a stub")


class FakeShell:
    """A party's servicer as a handler sees it: config, table, keys; failing raises."""

    def __init__(
        self,
        name: str,
        table: pd.DataFrame,
        tmp_path: Path,
        taxonomy: TaxonomyFile | None = None,
        next_hop: FakeShell | None = None,
    ) -> None:
        self.config: PartyConfig = PartyConfig(
            name=name,
            listen="127.0.0.1:1",
            data=tmp_path / f"{name}.csv",
            taxonomy=None,
            leader=LEADER,
            next_hop=Hop(next_hop.config.name, "127.0.0.1:2") if next_hop else None,
            tls=None,
            output_dir=tmp_path,
        )
        self.table = table
        self.source: TableSource = FrameSource(table)
        self.counting: CountingEngine | None = None  # the local engine
        self.taxonomy = taxonomy
        self.identity: Identity | None = None
        self.ca_certificate: x509.Certificate | None = None
        self.next_shell = next_hop
        self.next_stub: ForwardStub | None = _forwarded_in_process if next_hop else None
        self.idle_keys = IdleKeyWorkers(1, 0)
        self.max_message_bytes = 128 << 20
        self.sessions: dict[str, Any] = {}

    def _fail(self, context: Any, code: grpc.StatusCode, message: str) -> NoReturn:
        raise Refused(code, message)

    refuse = _fail

    def reject(
        self, context: Any, exc: Exception, code: grpc.StatusCode | None = None, prefix: str = ""
    ) -> NoReturn:
        raise Refused(code or grpc.StatusCode.FAILED_PRECONDITION, f"{prefix}{exc}")

    def _forward(self, method: str, request: Any, context: Any, what: str) -> Any:
        """The next hop's ring step, called in-process (what the gRPC forward reaches)."""
        nxt = self.next_shell
        assert nxt is not None and method == "Sum"
        session = nxt.sessions["open"]
        return ring.secure_sum(nxt, session, request, context)


def _open(shell: FakeShell, request: pb.OpenSessionRequest) -> Any:
    """OpenSession as the shell runs it after admission: the handler of the request's kind."""
    kind = request.WhichOneof("job")
    assert kind is not None
    assert HANDLERS[kind].admission(request, list(shell.table.columns)).kind == kind
    opened = HANDLERS[kind].open(shell, request)
    shell.sessions["open"] = opened.session
    return opened


def _request(ring_names: list[str], sum_mode: pb.SumMode = pb.SUM_MODE_RING, **job: Any) -> Any:
    request = pb.OpenSessionRequest(ring=ring_names, sum_mode=sum_mode, **job)
    request.ref.session_id = SESSION
    return request


# ------------------------------------------------------------------------------------- LKC
@pytest.fixture(scope="module")
def hospital() -> tuple[pd.DataFrame, TaxonomyFile]:
    return generate_hospital(60, seed=3).astype(str), load_taxonomy(hospital_taxonomy_path())


def _lkc_job(taxonomy: TaxonomyFile) -> pb.LKCJob:
    spec = spec_from_table({"L": 2, "K": 2, "C": "0.9", "drop": ["patient_id"]}, taxonomy, "t")
    return lkc_job_to_proto(spec)


def test_lkc_needs_a_taxonomy_and_the_configured_next_hop(
    tmp_path: Path, hospital: tuple[pd.DataFrame, TaxonomyFile]
) -> None:
    table, taxonomy = hospital
    job = _lkc_job(taxonomy)
    with pytest.raises(Exception, match="no taxonomy configured"):
        _open(FakeShell("a", table, tmp_path), _request(["a", "b"], lkc=job))
    alone = FakeShell("a", table, tmp_path, taxonomy)  # configured as the last hop
    with pytest.raises(Exception, match="ring says the next hop is 'b'"):
        _open(alone, _request(["a", "b"], lkc=job))


@pytest.mark.parametrize(("mode", "shares"), [(pb.SUM_MODE_RING, 1), (pb.SUM_MODE_PAIRWISE, 2)])
def test_lkc_opens_a_ring_session_with_the_keys_of_its_sum_mode(
    tmp_path: Path,
    hospital: tuple[pd.DataFrame, TaxonomyFile],
    mode: pb.SumMode,
    shares: int,
) -> None:
    table, taxonomy = hospital
    last = FakeShell("b", table, tmp_path, taxonomy)
    first = FakeShell("a", table, tmp_path, taxonomy, next_hop=last)
    opened = _open(first, _request(["a", "b"], mode, lkc=_lkc_job(taxonomy)))
    session = opened.session
    assert isinstance(session, LKCSession) and session.successor == "b"
    assert list(opened.reply.columns) == [c for c in table.columns if c != "patient_id"]
    assert len(opened.reply.keys) == shares
    assert type(session.sums) is (RingSum if mode == pb.SUM_MODE_RING else PairwiseSum)
    assert any(item.startswith("L=2") or "L=2" in item for item in opened.fingerprint_items)


def test_a_ring_sum_through_two_handlers_is_the_sum_of_both_tables_statistics(
    tmp_path: Path, hospital: tuple[pd.DataFrame, TaxonomyFile]
) -> None:
    """Open, share keys and sum once around a two-party ring; the leader opens the sealed total
    and, less its mask (none here), finds the two parties' statistics added."""
    table, taxonomy = hospital
    halves = [table.iloc[:25].reset_index(drop=True), table.iloc[25:].reset_index(drop=True)]
    last = FakeShell("b", halves[1], tmp_path, taxonomy)
    first = FakeShell("a", halves[0], tmp_path, taxonomy, next_hop=last)
    request = _request(["a", "b"], lkc=_lkc_job(taxonomy))
    keys = [*_open(first, request).reply.keys, *_open(last, request).reply.keys]
    sid = bytes.fromhex(SESSION)
    leader_key, leader_share = new_share(None, LEADER, "leader", sid, ONION_UNION)
    shares = pb.ShareKeysRequest(keys=[leader_share, *keys])
    shares.ref.session_id = SESSION
    for shell in (first, last):
        ring.share_keys(shell, shell.sessions["open"], shares, None)
    with pytest.raises(Refused, match="already accepted"):
        ring.share_keys(first, first.sessions["open"], shares, None)

    expected = LKCSession_stats(first) + LKCSession_stats(last)
    zero = pb.Vector(data=bytes(8 * expected.size), length=expected.size, dtype="<u8")
    total = pb.SumRequest(partial=zero)
    total.ref.session_id, total.ref.iteration = SESSION, 0
    reply = ring.secure_sum(first, first.sessions["open"], total, FakeContext())
    route = build_route(verified_peers(shares.keys, ONION_UNION, sid, None), ["a", "b"])
    channel = SealedTotalChannel.for_leader(leader_key, route[-2], sid)
    opened = channel.open(0, expected.size, reply.sealed_total)
    assert np.array_equal(
        from_vector(pb.Vector(data=opened, length=expected.size, dtype="<u8")), expected
    )


def LKCSession_stats(shell: FakeShell) -> np.ndarray:
    """The statistics a fresh copy of this party's session contributes at iteration 0."""
    session: LKCSession = shell.sessions["open"]
    fresh = LKCSession(SESSION, session.spec, session.schema, shell.table, session.ring, "a", 0)
    request = pb.SumRequest(ref=pb.SessionRef(session_id=SESSION, iteration=0))
    return np.asarray(fresh.contribution(request), dtype=np.uint64)


def test_the_sum_protocol_is_chosen_once_and_pairwise_refuses_a_sum_before_its_keys(
    tmp_path: Path, hospital: tuple[pd.DataFrame, TaxonomyFile]
) -> None:
    assert type(SumProtocol.chosen(pb.SUM_MODE_RING)) is RingSum
    assert type(SumProtocol.chosen(pb.SUM_MODE_PAIRWISE)) is PairwiseSum
    assert RingSum().callers(None, LEADER) == {LEADER}
    assert RingSum().callers("a", LEADER) == {"a"}
    assert PairwiseSum().callers("a", LEADER) == {LEADER}
    table, taxonomy = hospital
    shell = FakeShell("a", table, tmp_path, taxonomy)
    session = _open(shell, _request(["a"], pb.SUM_MODE_PAIRWISE, lkc=_lkc_job(taxonomy))).session
    request = pb.SumRequest()
    request.ref.session_id = SESSION
    with pytest.raises(Refused, match="pairwise keys were not shared") as refused:
        session.sums.add(shell, session, request, None)
    assert refused.value.code == grpc.StatusCode.FAILED_PRECONDITION


# ------------------------------------------------------------------------------------ DRBT
def test_drbt_steps_align_ids_project_once_and_write_the_assignment(tmp_path: Path) -> None:
    table = pd.DataFrame({"id": ["x", "y", "z"], "u": ["1", "2", "4"], "v": ["0", "5", "1"]})
    shell = FakeShell("a", table, tmp_path)
    job = drbt_job_to_proto("id", "gaussian", 1, False)
    opened = _open(shell, _request(["a"], drbt=job))
    assert list(opened.reply.attributes) == ["u", "v"]
    steps, session = HANDLERS["drbt"].steps, opened.session

    def ref(message: Any) -> Any:
        message.ref.session_id = SESSION
        return message

    with pytest.raises(Refused, match="no complete common id list") as early:
        steps["Project"](shell, session, ref(pb.ProjectRequest()), None)
    assert early.value.code == grpc.StatusCode.FAILED_PRECONDITION
    mine = steps["Ids"](shell, session, ref(pb.IdsRequest(send_yours=True)), None)
    assert list(mine.ids) == ["x", "y", "z"]
    lacking = steps["Ids"](shell, session, ref(pb.IdsRequest(ids=["z", "w"])), None)
    assert lacking.missing == 1
    assert steps["Ids"](shell, session, ref(pb.IdsRequest(ids=["z", "x", "y"])), None).missing == 0
    block = steps["Project"](shell, session, ref(pb.ProjectRequest()), None).block
    assert (block.rows, block.cols, block.dtype) == (3, 1, "<f8")
    with pytest.raises(Refused, match="already projected"):
        steps["Project"](shell, session, ref(pb.ProjectRequest()), None)
    with pytest.raises(Refused, match="does not match") as wrong:
        steps["Assign"](shell, session, ref(pb.AssignRequest(clusters=[0])), None)
    assert wrong.value.code == grpc.StatusCode.INVALID_ARGUMENT
    steps["Assign"](shell, session, ref(pb.AssignRequest(clusters=[1, 0, 1])), None)
    written = pd.read_csv(tmp_path / f"drbt-clusters-{SESSION[:12]}.csv", dtype=str)
    assert written.to_dict("list") == {"id": ["z", "x", "y"], "cluster": ["1", "0", "1"]}


# ---------------------------------------------------------------------------- randomization
def _randomize_job(keep: bool = False) -> pb.RandomizeJob:
    spec = RandomizeSpec(("sex",), (("F", "M"),), "ra", None, "uniform", keep)
    return spec_to_proto(spec)


def test_randomize_refuses_a_value_outside_the_agreed_domain(tmp_path: Path) -> None:
    shell = FakeShell("a", pd.DataFrame({"sex": ["F", "X"]}), tmp_path)
    with pytest.raises(Exception, match="column 'sex': 1 values outside the agreed domain"):
        _open(shell, _request(["a"], randomize=_randomize_job()))


def test_randomize_comes_after_the_histogram_sum(tmp_path: Path) -> None:
    shell = FakeShell("a", pd.DataFrame({"sex": ["F", "M", "M"]}), tmp_path)
    opened = _open(shell, _request(["a"], randomize=_randomize_job()))
    assert len(opened.reply.keys) == 1 and list(opened.reply.columns) == ["sex"]
    request = pb.RandomizeRequest()
    request.ref.session_id, request.ref.iteration = SESSION, 1
    with pytest.raises(Refused, match="after the histogram sum"):
        HANDLERS["randomize"].steps["Randomize"](shell, opened.session, request, None)


# ------------------------------------------------------------------------------------ gate
class _Servicer:
    """What the gate asks the servicer: without TLS, only the size limit."""

    secure = False

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def expected_peers(self, method: str) -> set[Any]:
        return set()

    def request_limit(self, method: str) -> int:
        return self.limit

    def refuse(self, context: Any, code: grpc.StatusCode, message: str) -> NoReturn:
        raise Refused(code, message)


class _Details:
    def __init__(self, method: str) -> None:
        self.method = method


def _gated(limit: int, method: str = "/fedanon.v1.Party/Sum") -> tuple[Any, list[Any]]:
    served: list[Any] = []

    def inner(request: Any, context: Any) -> Any:
        served.append(request)
        return pb.SumReply()

    handler = grpc.unary_unary_rpc_method_handler(
        inner,
        request_deserializer=pb.SumRequest.FromString,
        response_serializer=pb.SumReply.SerializeToString,
    )
    return PartyGate(_Servicer(limit)).intercept_service(
        lambda _d: handler, _Details(method)
    ), served


def _call(gated: Any, raw: bytes) -> Any:
    requests: Callable[[], Iterator[bytes]] = lambda: iter([raw])  # noqa: E731
    return gated.stream_unary(requests(), None)


def test_the_gate_parses_an_admitted_request_and_refuses_an_oversized_or_unknown_one() -> None:
    request = pb.SumRequest(partial=pb.Vector(length=3))
    request.ref.session_id = SESSION
    raw = request.SerializeToString()
    gated, served = _gated(limit=len(raw) + 3)
    _call(gated, raw)
    assert served == [request]
    with pytest.raises(Refused, match=f"request of {len(raw)} bytes exceeds") as big:
        _call(_gated(limit=len(raw) - 1)[0], raw)  # one byte over the open job's limit
    assert big.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    unknown = raw + bytes([0xF8, 0x01, 0x01])  # field 31 (varint): not in SumRequest
    with pytest.raises(Refused, match="field number it does not define") as bad:
        _call(gated, unknown)
    assert bad.value.code == grpc.StatusCode.INVALID_ARGUMENT and len(served) == 1


def test_the_gate_leaves_the_health_service_alone() -> None:
    gated, _served = _gated(limit=0, method="/grpc.health.v1.Health/Check")
    assert gated.unary_unary is not None and gated.stream_unary is None


def _sum_of_size(size: int) -> bytes:
    """A serialized SumRequest of exactly `size` bytes."""
    data = size
    while True:
        raw = pb.SumRequest(partial=pb.Vector(data=bytes(data), length=1)).SerializeToString()
        if len(raw) == size:
            return raw
        data -= len(raw) - size


@pytest.mark.parametrize(
    ("size", "admitted", "returned"),
    [
        (RETURN_MEMORY_FROM, False, 1),  # refused as too large: its buffers are handed back
        (RETURN_MEMORY_FROM, True, 1),  # served: the same after the handler
        (RETURN_MEMORY_FROM - 1, False, 0),  # smaller: the heap keeps it for the next call
    ],
)
def test_the_gate_hands_back_the_memory_of_a_large_request(
    monkeypatch: pytest.MonkeyPatch, size: int, admitted: bool, returned: int
) -> None:
    """The daemon's resident memory after a large request must not depend on where glibc put
    gRPC's buffers (the daemon test measures it, which a lucky heap can pass): the gate itself
    asks for the freed heap back after every request of RETURN_MEMORY_FROM bytes or more."""
    calls: list[None] = []
    monkeypatch.setattr(fedanon.party.gate, "return_freed_memory", lambda: calls.append(None))
    raw = _sum_of_size(size)
    gated, served = _gated(limit=size if admitted else size - 1)
    if admitted:
        _call(gated, raw)
        assert len(served) == 1
    else:
        with pytest.raises(Refused, match="exceeds"):
            _call(gated, raw)
    assert len(calls) == returned
