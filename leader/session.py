"""One session's plumbing at the leader, the same for every job kind.

Open the session at every party (the handshake: fingerprints compared item by item), renew its
lease while the leader computes, abort it everywhere on any failure (or Ctrl-C), end it. For the
ring job kinds (LKC, randomization) leader/ring.py's ``open_ring`` adds what every ring
session needs: the parties' released columns agreed, the union keys shared and the secure-sum
protocol chosen from the job's ``sum_mode``. Each job kind's leader module (leader/kinds/)
keeps only its own steps between the handshake and ``End``.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import partial
from typing import Any, Protocol

import grpc

from fedanon.errors import FedanonError
from fedanon.federation.config import Hop
from fedanon.federation.exclusion import attempt_binding
from fedanon.federation.protocol import handshake_items, version_items
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import RECONNECT_OPTIONS, make_channel
from fedanon.fingerprint import fingerprint
from fedanon.interrupts import thread_done_within, wait_in_slices
from fedanon.leader.farewell import Farewells
from fedanon.leader.federation import PartyFailure, describe_rpc_error
from fedanon.leader.relay import relay_channels
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc

#: The leader's waits on the parties look at the clock (and let a signal handler run) this often.
POLL_SECONDS = 0.2
#: How long past a phase's deadline the leader waits for the calls' own deadline errors (which
#: name the party the way gRPC saw it) before it names the silent party itself.
DEADLINE_GRACE_SECONDS = 1.0
#: The whole best-effort abort: every party is told at once, and no answer is awaited longer.
ABORT_SECONDS = 3.0
#: A party's lease where its handshake reply did not say (the party's default).
DEFAULT_LEASE_SECONDS = 30.0


class SessionJob(Protocol):
    """What the plumbing needs of any job kind's leader job."""

    @property
    def parties(self) -> list[Hop]: ...
    @property
    def tls(self) -> TLSFiles | None: ...
    @property
    def name(self) -> str: ...
    @property
    def rpc_seconds(self) -> float: ...
    @property
    def relay_listen(self) -> str | None: ...


def first_difference(ours: Sequence[str], theirs: Sequence[str]) -> str:
    """Name the first item where a party's fingerprint differs from the leader's (with the
    party's value when it has the same ``key:`` with another value, e.g. a version)."""
    theirs_set, ours_set = set(theirs), set(ours)
    for item in ours:
        if item not in theirs_set:
            key = item.partition(":")[0] + ":"
            other = next((t for t in theirs if t.startswith(key)), None) if ":" in item else None
            if other is not None:
                return f"the leader has '{item}', the party has '{other}'"
            return f"the leader has '{item}', the party does not"
    for item in theirs:
        if item not in ours_set:
            return f"the party has '{item}', the leader does not"
    return "the items are the same but in another order"


class Channels:
    """The leader's channels to the parties, kept across the sessions of one job.

    A rerun without a party that dropped out (leader/exclusion.py) is the next attempt of the
    same session (``Session.rekey``), over the connections the first attempt opened: it makes
    no new TLS connection. The channels of parties a later attempt leaves out are set aside
    (`left`: the session's abort to them may still be in flight, leader/farewell.py) and
    closed with the session (`close_left`). Direct transport only: the outbound relay's
    channels are its parties' own streams (``relay_channels``).
    """

    def __init__(self, job: SessionJob) -> None:
        self.job = job
        self.open: dict[str, grpc.Channel] = {}
        self.left: list[grpc.Channel] = []

    def to(self, hops: Sequence[Hop]) -> dict[str, grpc.Channel]:
        """A channel to each of `hops` (those already open reused); the others set aside."""
        names = {hop.name for hop in hops}
        for name in [n for n in self.open if n not in names]:
            self.left.append(self.open.pop(name))
        for hop in hops:
            if hop.name not in self.open:
                self.open[hop.name] = make_channel(
                    hop.address, hop.name, self.job.tls, options=RECONNECT_OPTIONS
                )
        return {hop.name: self.open[hop.name] for hop in hops}

    def __enter__(self) -> Channels:
        return self

    def close_left(self) -> None:
        """Close the channels of the parties the session's attempts left out."""
        for channel in self.left:
            channel.close()
        self.left.clear()

    def __exit__(self, *_exc: object) -> None:
        self.close_left()
        for channel in self.open.values():
            channel.close()
        self.open.clear()


class Session:
    """Stubs to every party for one session; aborts everywhere on failure."""

    def __init__(
        self,
        job: SessionJob,
        parties: Sequence[Hop] | None = None,
        channels: Channels | None = None,
    ) -> None:
        """A session with the job's parties, or with `parties` (a rerun's survivors), over
        `channels` where the job keeps them across its sessions (closed by their owner), else
        over channels of its own (closed with the session)."""
        hops = list(job.parties if parties is None else parties)
        self.job = job
        self.session_id = secrets.token_hex(16)
        self.attempt = 0  # a rerun without parties that dropped out is the next (``rekey``)
        self.ring = [p.name for p in hops]
        self.owns_channels = channels is None or job.relay_listen is not None
        self.channels: dict[str, Any]
        self.transport: Channels | None = None
        if job.relay_listen is not None:
            self.channels = relay_channels(hops, job.tls, job.relay_listen, job.rpc_seconds)
        else:
            self.transport = Channels(job) if channels is None else channels
            self.channels = self.transport.to(hops)
        self.stubs = {n: pb_grpc.PartyStub(c) for n, c in self.channels.items()}
        self.pool = ThreadPoolExecutor(max_workers=max(2, len(self.ring)))
        self.stop_heartbeat = threading.Event()
        self.heartbeat: threading.Thread | None = None
        self.renewals: list[Any] = []  # the heartbeat's calls in flight
        self.leases: dict[str, float] = {}  # each party's lease, from its handshake reply
        self.farewells = Farewells()  # the aborts to parties a rerun left out

    def ref(self, iteration: int = 0) -> pb.SessionRef:
        return pb.SessionRef(session_id=self.session_id, iteration=iteration, attempt=self.attempt)

    @property
    def binding(self) -> bytes:
        """What the union's contexts of the current attempt are bound to (the session id for
        the first: federation/exclusion.py's ``attempt_binding``)."""
        return attempt_binding(self.session_id, self.attempt, self.ring)

    def rekey(self, hops: Sequence[Hop], attempt: int) -> None:
        """Go on as `attempt` among `hops` (a rerun's survivors, in ring order): every message
        from now on carries it. The parties left out are told, best effort and in the
        background, that the session is over for them (leader/farewell.py): the abort names the
        attempt they were in and the one they are excluded from, nothing of the survivors."""
        names = {hop.name for hop in hops}
        request = pb.EndRequest(
            ref=self.ref(),
            abort=True,
            reason=f"excluded: the session goes on as attempt {attempt} without this party",
        )
        for name in [n for n in self.ring if n not in names]:
            lease = self.leases.get(name, DEFAULT_LEASE_SECONDS)
            self.farewells.send(name, self.stubs[name], request, lease)
        self.attempt = attempt
        self.ring = [hop.name for hop in hops]
        if self.transport is not None:
            self.channels = self.transport.to(hops)
        else:
            self.channels = {name: self.channels[name] for name in self.ring}
        self.stubs = {name: self.stubs[name] for name in self.ring}

    def fan_out(
        self,
        phase: str,
        call: Callable[[str, pb_grpc.PartyStub], Any],
        seconds: float | None = None,
        parties: Collection[str] | None = None,
    ) -> dict[str, Any]:
        """Call every party (or those of `parties`) in parallel; the first failure (in ring
        order) is raised.

        `seconds` is the phase's deadline (default: the job's ``rpc_seconds``), the one every
        `call` carries; :meth:`gather` enforces it on the whole phase.
        """
        futures = {
            n: self.pool.submit(call, n, s)
            for n, s in self.stubs.items()
            if parties is None or n in parties
        }
        return self.gather(phase, futures, self.job.rpc_seconds if seconds is None else seconds)

    def gather(
        self, phase: str, futures: Mapping[str, Future[Any]], seconds: float
    ) -> dict[str, Any]:
        """The results of calls to parties, all within one phase deadline of `seconds`.

        Every call carries the deadline itself; this wait is bounded too (so no call that
        forgot its deadline, or retries past it, can hold the leader), and it looks at the
        clock every ``POLL_SECONDS``: a SIGTERM delivered to another thread of the process
        reaches the main thread's handler at the next look, not once a party answers. Once
        every call ended, the first failure in ring order is raised, naming the party and
        `phase` (the same party whichever failed first); a party still silent
        ``DEADLINE_GRACE_SECONDS`` after the deadline is named as not answering.
        """
        deadline = time.monotonic() + seconds + DEADLINE_GRACE_SECONDS
        pending = set(futures.values())
        while pending and time.monotonic() < deadline:
            pending = wait(pending, min(deadline - time.monotonic(), POLL_SECONDS))[1]
        out: dict[str, Any] = {}
        failure: PartyFailure | None = None
        silent = [n for n in self.ring if n in futures and not futures[n].done()]
        for name in (n for n in self.ring if n in futures and futures[n].done()):
            try:
                out[name] = futures[name].result()
            except grpc.RpcError as exc:
                failure = failure or describe_rpc_error(exc, name, phase)
        if failure is None and silent:
            failure = PartyFailure(f"{phase}: party {silent[0]}: no answer before the deadline")
        if failure is not None:
            raise failure
        return out

    def handshake(
        self, items: Sequence[str], request: pb.OpenSessionRequest
    ) -> dict[str, pb.OpenSessionReply]:
        """Open the session at every party with `request` (its job field, e.g. ``lkc``; the
        session reference and the ring are filled in here), keep its lease alive, and check
        every party's fingerprint against the leader's `items`. Returns each party's reply."""
        request.ref.CopyFrom(self.ref())
        request.ring[:] = self.ring
        request.versions[:] = version_items()
        opened = self.fan_out(
            "handshake", lambda n, s: s.OpenSession(request, timeout=self.job.rpc_seconds)
        )
        self.keep_alive(opened)
        items = handshake_items(items)
        digest = fingerprint(items)
        for name in self.ring:
            reply = opened[name]
            if reply.fingerprint != digest:
                raise FedanonError(
                    f"handshake: party {name} differs from the leader: "
                    f"{first_difference(items, list(reply.fingerprint_items))}"
                )
        return opened

    def keep_alive(self, opened: dict[str, Any]) -> None:
        """Renew the session's lease at every party (a quarter of the shortest lease) until
        the session closes. Call once, right after a successful handshake."""
        self.leases = {n: r.lease_seconds for n, r in opened.items() if r.lease_seconds > 0}
        leases = list(self.leases.values())
        interval = min(leases) / 4 if leases else 5.0
        self.heartbeat = threading.Thread(
            target=self._renew_leases,
            args=(interval,),
            name=f"lease-{self.session_id[:8]}",
            daemon=True,
        )
        self.heartbeat.start()

    def _renew_leases(self, interval: float) -> None:
        """Best effort: a party that misses a heartbeat fails the job's next real call anyway."""
        while not self.stop_heartbeat.wait(interval):
            request = pb.RenewRequest(ref=self.ref())  # the current attempt's
            # `close` cancels the calls in flight (the channels may outlive the session).
            with contextlib.suppress(grpc.RpcError, grpc.FutureCancelledError, ValueError):
                stubs = list(self.stubs.values())
                self.renewals = calls = [
                    stub.Renew.future(request, timeout=interval) for stub in stubs
                ]
                if self.stop_heartbeat.is_set():  # `close` may have missed these
                    for call in calls:
                        call.cancel()
                    break
                for call in calls:
                    with contextlib.suppress(grpc.RpcError, grpc.FutureCancelledError):
                        call.result()

    def end(self) -> dict[str, pb.EndReply]:
        """End the session at every party; each reply carries the party's byte counts."""
        request = pb.EndRequest(ref=self.ref())
        return self.fan_out("end", lambda n, s: s.End(request, timeout=self.job.rpc_seconds))

    def abort(self, reason: str) -> None:
        """Best effort: tell every party at once to drop the session, ``ABORT_SECONDS`` in all
        however many parties are frozen (errors ignored: a party that misses the abort drops
        the session when its lease lapses)."""
        request = pb.EndRequest(ref=self.ref(), abort=True, reason=reason[:500])
        calls = []
        for stub in self.stubs.values():
            with contextlib.suppress(grpc.RpcError, ValueError):
                calls.append(stub.End.future(request, timeout=ABORT_SECONDS))
        # Bounded here too (the calls carry their deadline): the abort runs on the way out of
        # a failure or a signal, and must end even where gRPC could not complete a call.
        until = time.monotonic() + ABORT_SECONDS + DEADLINE_GRACE_SECONDS
        for sent in calls:
            with contextlib.suppress(
                grpc.RpcError, grpc.FutureCancelledError, grpc.FutureTimeoutError
            ):
                sent.result(timeout=max(until - time.monotonic(), 0.0))

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _traceback: object
    ) -> None:
        """Any failure (or Ctrl-C) aborts the session at every reachable party; always close."""
        if error is not None:
            self.abort(str(error) or kind.__name__)  # type: ignore[union-attr]
        self.close()

    def close(self) -> None:
        self.stop_heartbeat.set()
        self.pool.shutdown(wait=False, cancel_futures=True)
        for call in self.renewals:
            call.cancel()
        self.farewells.close()  # before their channels close
        if self.transport is not None:
            self.transport.close_left()
        if self.owns_channels:
            for channel in self.channels.values():
                channel.close()
        if self.heartbeat is not None:  # its calls are cancelled (or end with the channels)
            wait_in_slices(partial(thread_done_within, self.heartbeat))
