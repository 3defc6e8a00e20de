"""The session's waits on the way out end on their own: the abort that a failure or a signal
runs gives up after its bound even when a call never completes (a ``leader run`` terminated
while gRPC could not complete calls waited in the abort until it was killed)."""

from __future__ import annotations

import socket
import threading
from types import SimpleNamespace

import grpc

from fedanon.federation.config import Hop
from fedanon.leader.session import ABORT_SECONDS, DEADLINE_GRACE_SECONDS, Session
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc


class _Never:
    """``stub.End``: its call is a real gRPC call that does not complete within the test (it
    waits for a connection to a port that refuses them, for ten minutes)."""

    def __init__(self, channel: grpc.Channel) -> None:
        self.channel = channel

    def future(self, request: pb.EndRequest, timeout: float) -> grpc.Future:
        assert timeout == ABORT_SECONDS
        return pb_grpc.PartyStub(self.channel).End.future(request, timeout=600, wait_for_ready=True)


def test_the_abort_gives_up_after_its_bound_when_a_call_never_completes() -> None:
    with socket.socket() as held:  # bound, never listening: connections are refused
        held.bind(("127.0.0.1", 0))
        job = SimpleNamespace(
            parties=[Hop("p", f"127.0.0.1:{held.getsockname()[1]}")],
            tls=None,
            name="job",
            rpc_seconds=5.0,
            relay_listen=None,
        )
        session = Session(job)
        try:
            stub = SimpleNamespace(End=_Never(session.channels["p"]))
            session.stubs = {"p": stub}  # type: ignore[dict-item]  # only End is called
            aborting = threading.Thread(target=session.abort, args=("stop",), daemon=True)
            aborting.start()
            aborting.join(ABORT_SECONDS + DEADLINE_GRACE_SECONDS + 20)  # slack for a loaded CPU
            assert not aborting.is_alive(), "the abort still waits for a call that never ends"
        finally:
            session.close()
