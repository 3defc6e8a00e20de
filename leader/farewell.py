"""Telling a party a rerun left out that its session is over (issue #28, h-abort).

A party the leader excludes (leader/exclusion.py) may be frozen, cut off or merely slow: it
still holds the session and refuses other leaders' jobs as busy until its lease lapses. The
leader tells it with an abort (``End`` with ``abort``, naming the attempt it was excluded
from), best effort: one thread per excluded party tries again while the party does not answer
(each try with its own short deadline), until it answers, until its lease would have lapsed
anyway, or until the session closes; the job never waits for it. The abort tells the party
only that it was excluded and from which attempt (docs/leakage.md, "Exclusion"): no survivor,
no count.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import grpc

from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc

#: Each try's deadline: short, so that a party resumed from a freeze gets a try it can answer.
TRY_SECONDS = 3.0
#: The pause between two tries of a party that refused the connection (killed, host down).
PAUSE_SECONDS = 0.5
#: How long `Farewells.close` waits for its threads once it cancelled their calls.
CLOSE_SECONDS = 2.0
#: The codes of a party that did not get the abort (a refusal is an answer: no further try).
UNANSWERED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


class Farewells:
    """The aborts in flight to the parties that reruns left out; `told` the parties that got
    theirs (their answer came; a refusal counts: the party does not hold the attempt)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.calls: dict[str, Any] = {}
        self.told: list[str] = []

    def send(
        self, name: str, stub: pb_grpc.PartyStub, request: pb.EndRequest, lease: float
    ) -> None:
        """Tell `name` (over `stub`) with `request`, for at most its `lease` from now: after
        that it has freed itself, having heard nothing from the leader since the exclusion."""
        thread = threading.Thread(
            target=self._tell,
            args=(name, stub, request, time.monotonic() + lease),
            name=f"farewell-{name}",
            daemon=True,
        )
        self.threads.append(thread)
        thread.start()

    def _tell(
        self, name: str, stub: pb_grpc.PartyStub, request: pb.EndRequest, until: float
    ) -> None:
        """Try until `name` answers, `until` passes or the session closes."""
        while not self.stop.is_set() and time.monotonic() < until:
            try:
                with self.lock:
                    if self.stop.is_set():
                        return
                    self.calls[name] = call = stub.End.future(request, timeout=TRY_SECONDS)
                call.result()
            except grpc.FutureCancelledError:
                return
            except grpc.RpcError as exc:
                if exc.code() not in UNANSWERED:
                    if exc.code() != grpc.StatusCode.CANCELLED:
                        self.told.append(name)
                    return
                self.stop.wait(PAUSE_SECONDS)
                continue
            except ValueError:  # the channel was closed under it
                return
            self.told.append(name)
            return

    def close(self) -> None:
        """Stop trying (the session closes): the calls in flight are cancelled."""
        with self.lock:
            self.stop.set()
            calls = list(self.calls.values())
        for call in calls:
            call.cancel()
        until = time.monotonic() + CLOSE_SECONDS
        for thread in self.threads:
            thread.join(max(until - time.monotonic(), 0.0))
