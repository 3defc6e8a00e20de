"""The session's close while a lease renewal is in flight (leader/session.py ``_renew_leases``).

Over the outbound transport a call's future is the tunnel's (federation/tunnel.py), not a gRPC
one: ``close`` cancels the heartbeat's calls, and ``result()`` then raised concurrent.futures'
``CancelledError``, which the heartbeat (written for gRPC's ``FutureCancelledError``) did not
expect: its thread died with a traceback (a PytestUnhandledThreadExceptionWarning in
tests/distributed/test_outbound.py), and the reply arriving later made the tunnel's callback
log "exception calling callback". A tunnelled call's future now fails as a gRPC call's does."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from fedanon.federation.tunnel import TunnelChannel, TunnelError
from fedanon.leader.session import Session
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc


class Tunnel:
    """A tunnel whose calls stay in flight until the test answers them."""

    def __init__(self) -> None:
        self.calls: list[Future[bytes]] = []
        self.sent = threading.Event()

    def send(self, *_args: Any) -> Future[bytes]:
        self.calls.append(Future())
        self.sent.set()
        return self.calls[-1]

    def stub(self) -> pb_grpc.PartyStub:
        return pb_grpc.PartyStub(TunnelChannel(self.send))


@pytest.fixture
def thread_failures() -> Iterator[list[BaseException | None]]:
    """Every exception that ends a thread while the test runs."""
    failures: list[BaseException | None] = []
    hook = threading.excepthook
    threading.excepthook = lambda args: failures.append(args.exc_value)
    yield failures
    threading.excepthook = hook


def test_closing_a_session_while_a_renewal_is_in_flight_is_quiet(
    thread_failures: list[BaseException | None], caplog: pytest.LogCaptureFixture
) -> None:
    tunnel = Tunnel()
    job = SimpleNamespace(parties=[], tls=None, name="job", rpc_seconds=5.0, relay_listen=None)
    session = Session(job)
    session.stubs = {"hospital-1": tunnel.stub()}
    session.keep_alive({"hospital-1": pb.OpenSessionReply(lease_seconds=1)})  # every 0.25 s
    assert tunnel.sent.wait(30)  # a renewal is in flight ...
    with caplog.at_level(logging.ERROR):
        session.close()  # ... and cancelled here
        heartbeat = session.heartbeat
        assert heartbeat is not None and not heartbeat.is_alive()
        tunnel.calls[0].set_result(pb.RenewReply().SerializeToString())  # a late reply
    assert thread_failures == []
    assert [r.getMessage() for r in caplog.records] == []


def test_a_tunnelled_calls_future_fails_as_a_grpc_calls_does() -> None:
    """Cancelled: ``FutureCancelledError``; a wait that runs out: ``FutureTimeoutError``; the
    call's own failure (an ``RpcError``) as it is."""
    tunnel = Tunnel()
    stub = tunnel.stub()
    cancelled = stub.Renew.future(pb.RenewRequest(), timeout=5)
    assert cancelled.cancel()
    with pytest.raises(grpc.FutureCancelledError):
        cancelled.result()
    with pytest.raises(grpc.FutureCancelledError):
        cancelled.exception()
    pending = stub.Renew.future(pb.RenewRequest(), timeout=5)
    with pytest.raises(grpc.FutureTimeoutError):
        pending.result(timeout=0.01)
    with pytest.raises(grpc.FutureTimeoutError):
        pending.exception(timeout=0.01)
    tunnel.calls[1].set_exception(TunnelError(grpc.StatusCode.UNAVAILABLE, "gone"))
    with pytest.raises(grpc.RpcError):
        pending.result()
    failed = stub.Renew.future(pb.RenewRequest(), timeout=5)
    tunnel.calls[2].set_exception(TimeoutError("the call's own"))
    with pytest.raises(TimeoutError, match="the call's own"):
        failed.result(timeout=1)
