"""A ring hop retries an unreachable next hop at most a second apart, and sooner once the hop
listens again (#28, rejoin): a next hop that restarts is reached as soon as its channel finds it
listening, not after a doubling delay of several seconds that the rejoin would then pay on top
of the restart."""

from __future__ import annotations

import time
from concurrent import futures
from pathlib import Path
from typing import Any, cast

import grpc
import pandas as pd
import pytest

from fedanon.federation.config import Hop
from fedanon.leader.sim import free_ports
from fedanon.party.daemon import build_servicer
from fedanon.party.servicer import MAX_RETRY_DELAY, PartyServicer
from fedanon.party.shell import ForwardStub
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from tests.party.fakes import Aborted, Context, party_config


class Unreachable(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "connection refused"


class DownStub:
    """A next hop that refuses every call."""

    def __init__(self) -> None:
        self.calls = 0

    def Sum(self, request: Any, timeout: float) -> Any:
        self.calls += 1
        raise Unreachable()


class Deadline(Context):
    def time_remaining(self) -> float:
        return 600.0


@pytest.mark.parametrize(("retries", "first"), [(8, 0.2), (3, 2.5)])
def test_retries_double_up_to_a_second_apart(
    monkeypatch: pytest.MonkeyPatch, retries: int, first: float
) -> None:
    config = party_config(
        "hospital-a",
        next_hop=Hop("hospital-b", "127.0.0.1:9"),
        connect_retries=retries,
        backoff_seconds=first,
    )
    stub = DownStub()
    next_stub = cast(ForwardStub, lambda: stub)  # only its Sum is called
    shell = PartyServicer(config, pd.DataFrame({"a": ["1"]}), None, next_stub, None, None)
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    with pytest.raises(Aborted, match="unreachable"):
        shell._forward("Sum", pb.SumRequest(), Deadline(), "iteration 1")
    assert stub.calls == retries + 1
    cap = max(MAX_RETRY_DELAY, first)  # a configured first delay above the cap is kept
    expected = [min(first * 2**i, cap) for i in range(retries)]
    assert waits == pytest.approx(expected)
    if first < MAX_RETRY_DELAY:
        assert max(waits) == MAX_RETRY_DELAY  # the old doubling reached 25.6 s here


class NextHop(pb_grpc.PartyServicer):
    """A next hop that answers every sum (it starts listening only after the forward's first
    try failed: a restart)."""

    def Sum(self, request: pb.SumRequest, context: grpc.ServicerContext) -> pb.SumReply:
        return pb.SumReply(sealed_total=b"from hospital-b")


def test_a_retry_waits_for_the_next_hop_listening_not_for_its_delay(tmp_path: Path) -> None:
    """The daemon's forward retries a next hop that comes back as soon as the channel finds it
    listening: with a first delay of 5 s configured, a hop back after a fraction of a second is
    answered well before the delay has passed (it used to sleep the whole delay first)."""
    data = tmp_path / "a.csv"
    data.write_text("a\n1\n")
    (port,) = free_ports(1)
    config = party_config(
        "hospital-a",
        data=data,
        next_hop=Hop("hospital-b", f"127.0.0.1:{port}"),
        connect_retries=1,
        backoff_seconds=5.0,
    )
    shell = build_servicer(config)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    waits = shell.next_ready

    def back_then_wait(seconds: float) -> bool:
        # The next hop listens again once the first try has failed (bound only now: a bound
        # port that is not served yet would hold the first try instead of refusing it).
        pb_grpc.add_PartyServicer_to_server(NextHop(), server)
        server.add_insecure_port(f"127.0.0.1:{port}")
        server.start()
        return waits(seconds)

    shell.next_ready = back_then_wait
    try:
        began = time.monotonic()
        reply = shell._forward("Sum", pb.SumRequest(), Deadline(), "iteration 1")
        took = time.monotonic() - began
    finally:
        server.stop(None).wait()
    assert isinstance(reply, pb.SumReply) and reply.sealed_total == b"from hospital-b"
    assert took < config.backoff_seconds
