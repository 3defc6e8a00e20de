"""The leader's relay: the one port of an outbound-only federation.

With ``transport = "outbound"`` no party listens. Each party daemon dials this relay once
(mutual TLS, the party's certificate) and keeps one ``Relay.Connect`` stream open
(party/outbound.py); the leader's calls to the party travel over it as tunnel frames
(federation/tunnel.py), and so do the ring's party-to-party calls, which the relay only passes
on: they are sealed end to end between the two parties (federation/relay_crypto.py), so the
relay sees their sizes, timing, method names, session id, iteration and counter, and nothing
else (docs/leakage.md, "The relay").

A party that reconnects replaces its old stream (calls pending on the old one fail as
``UNAVAILABLE``, so a job aborts naming the party); the next call goes over the new stream,
and the party's daemon still holds its session, so a job between calls resumes. A call made
while the party is redialling waits for it (``RECONNECT_GRACE_SECONDS`` at most).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any

import grpc
from cryptography.hazmat.primitives.serialization import Encoding

from fedanon.crypto.errors import IdentityError
from fedanon.crypto.identity import load_identity_files
from fedanon.crypto.tls import peer_identity
from fedanon.errors import FedanonError
from fedanon.federation.config import Hop
from fedanon.federation.limits import DEFAULT_LIMITS
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_server
from fedanon.federation.tunnel import (
    RECONNECT_GRACE_SECONDS,
    Endpoint,
    TunnelChannel,
    TunnelError,
    reply_error,
)
from fedanon.interrupts import wait_in_slices
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

#: Each party's stream holds one of the relay server's threads for as long as it is connected.
RELAY_WORKERS = 300
#: What a recording relay (the leakage tests) is handed: the party the frame came from or goes
#: to, "in" or "out", and the frame.
Observer = Callable[[str, str, pb.TunnelFrame], None]


class Relay(pb_grpc.RelayServicer):
    """Parties' tunnels by certificate name; the leader's calls and the parties' hops over them."""

    def __init__(self, certificate_der: bytes, observer: Observer | None = None) -> None:
        self.certificate_der = certificate_der
        self.observer = observer
        self.endpoints: dict[str, Endpoint] = {}
        self.changed = threading.Condition()
        self.server: grpc.Server | None = None
        self.address = ""

    # ------------------------------------------------------------------ the stream
    def Connect(
        self, request_iterator: Iterator[pb.TunnelFrame], context: grpc.ServicerContext
    ) -> Iterator[pb.TunnelFrame]:
        try:
            caller = peer_identity(context)
        except IdentityError as exc:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, f"relay: {exc}")
        if caller.role != "party":
            context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"relay: '{caller.name}' ({caller.role}) is not a party",
            )
        name = caller.name
        endpoint = Endpoint(name)
        with self.changed:
            old = self.endpoints.get(name)
            self.endpoints[name] = endpoint
            self.changed.notify_all()
        if old is not None:
            log.warning("party %s reconnected to the relay; its old stream is closed", name)
            old.close()
        log.info("party %s connected to the relay", name)
        endpoint.send(pb.TunnelFrame(hello_certificate=self.certificate_der))
        reader = threading.Thread(
            target=self._read, args=(name, endpoint, request_iterator), daemon=True
        )
        reader.start()
        context.add_callback(endpoint.close)
        for frame in endpoint.outgoing():
            self._observe(name, "out", frame)
            yield frame

    def _read(self, name: str, endpoint: Endpoint, frames: Iterator[pb.TunnelFrame]) -> None:
        try:
            for frame in frames:
                self._observe(name, "in", frame)
                kind = frame.WhichOneof("kind")
                if kind == "reply":
                    endpoint.deliver(frame.reply)
                elif kind == "call":
                    self._pass_on(name, endpoint, frame)
        except grpc.RpcError:
            pass  # the party went away; closing below fails its pending calls
        finally:
            endpoint.close()
            with self.changed:
                if self.endpoints.get(name) is endpoint:
                    del self.endpoints[name]
                self.changed.notify_all()
            log.info("party %s disconnected from the relay", name)

    def _pass_on(self, sender: str, source: Endpoint, frame: pb.TunnelFrame) -> None:
        """A party's call to another party: sent on as it is (naming its sender instead of its
        receiver), its reply routed back."""
        call = frame.call
        caller_id, receiver = call.call_id, call.peer
        target = self.endpoints.get(receiver)
        if target is None:
            failed = pb.TunnelReply(
                call_id=caller_id,
                code=grpc.StatusCode.UNAVAILABLE.value[0],
                details=f"'{receiver}' is not connected to the relay",
            )
            source.send(pb.TunnelFrame(reply=failed))
            return
        call.peer = sender
        sent = target.call(frame, call.timeout_seconds)

        def back(done: Future[pb.TunnelReply]) -> None:
            error = done.exception()
            if isinstance(error, TunnelError):
                reply = pb.TunnelReply(code=error.code().value[0], details=error.details())
            else:
                reply = pb.TunnelReply()
                reply.CopyFrom(done.result())
            reply.call_id = caller_id
            source.send(pb.TunnelFrame(reply=reply))

        sent.add_done_callback(back)

    def _observe(self, name: str, direction: str, frame: pb.TunnelFrame) -> None:
        if self.observer is not None:
            self.observer(name, direction, frame)

    # ------------------------------------------------------------------ the leader's side
    def connected(self) -> list[str]:
        with self.changed:
            return sorted(self.endpoints)

    def wait_connected(self, names: list[str], seconds: float) -> None:
        """Wait until every party in `names` has a stream open; name the first missing one."""
        deadline = time.monotonic() + seconds
        with self.changed:
            while True:
                missing = [n for n in names if n not in self.endpoints]
                remaining = deadline - time.monotonic()
                if not missing:
                    return
                if remaining <= 0:
                    raise FedanonError(
                        f"handshake: party {missing[0]}: not connected to the relay at "
                        f"{self.address} after {seconds:.0f} s"
                    )
                self.changed.wait(min(remaining, 0.5))

    def channel(self, name: str) -> TunnelChannel:
        """A channel to party `name` over whichever stream it has open when a call is made.

        A party whose stream is down (it broke; the party redials) gets the call when it is
        back, within `RECONNECT_GRACE_SECONDS` and the call's deadline; the wait runs on its own
        thread, so a fan-out's calls to the other parties go out meanwhile."""

        def send(
            method: str, request: Any, serialize: Callable[[Any], bytes], timeout: float | None
        ) -> Future[bytes]:
            out: Future[bytes] = Future()
            frame = pb.TunnelFrame()
            frame.call.method, frame.call.request = method, serialize(request)
            deadline = time.monotonic() + (timeout if timeout is not None else 86400.0)
            endpoint = self._open(name)
            if endpoint is not None:
                self._call(endpoint, frame, deadline, out)
            else:
                threading.Thread(
                    target=self._call_when_back,
                    args=(name, frame, deadline, out),
                    name=f"relay-wait-{name}",
                    daemon=True,
                ).start()
            return out

        return TunnelChannel(send)

    def _open(self, name: str) -> Endpoint | None:
        endpoint = self.endpoints.get(name)
        return None if endpoint is None or endpoint.closed.is_set() else endpoint

    def _call_when_back(
        self, name: str, frame: pb.TunnelFrame, deadline: float, out: Future[bytes]
    ) -> None:
        until = min(deadline, time.monotonic() + RECONNECT_GRACE_SECONDS)
        with self.changed:
            while (endpoint := self._open(name)) is None and time.monotonic() < until:
                self.changed.wait(min(until - time.monotonic(), 0.5))
        if endpoint is None:
            out.set_exception(
                TunnelError(
                    grpc.StatusCode.UNAVAILABLE, f"not connected to the relay at {self.address}"
                )
            )
        else:
            self._call(endpoint, frame, deadline, out)

    @staticmethod
    def _call(
        endpoint: Endpoint, frame: pb.TunnelFrame, deadline: float, out: Future[bytes]
    ) -> None:
        """Send `frame` on `endpoint`; `out` gets the reply's bytes or its failure."""
        sent = endpoint.call(frame, max(deadline - time.monotonic(), 0.0))

        def done(reply: Future[pb.TunnelReply]) -> None:
            error = reply.exception() or reply_error(reply.result())
            if error is not None:
                out.set_exception(error)
            else:
                out.set_result(reply.result().reply)

        sent.add_done_callback(done)

    def stop(self) -> None:
        with self.changed:
            endpoints = list(self.endpoints.values())
        for endpoint in endpoints:
            endpoint.close()
        if self.server is not None:
            wait_in_slices(self.server.stop(1).wait)  # the main thread's wait: a signal ends it


_RELAYS: dict[str, Relay] = {}
_RELAYS_LOCK = threading.Lock()


def serve_relay(listen: str, tls: TLSFiles | None, observer: Observer | None = None) -> Relay:
    """The relay listening on `listen` in this process, started on first use.

    One per address for the life of the leader process: parties stay connected between jobs.
    """
    with _RELAYS_LOCK:
        relay = _RELAYS.get(listen)
        if relay is not None:
            return relay
        if tls is None:
            raise FedanonError(
                'transport = "outbound" needs [tls]: the relay authenticates parties'
            )
        identity = load_identity_files(tls.cert, tls.key)
        relay = Relay(identity.certificate.public_bytes(Encoding.DER), observer)
        try:
            server, port = make_server(
                listen, tls, max_workers=RELAY_WORKERS, limits=DEFAULT_LIMITS
            )
        except RuntimeError:
            raise FedanonError(
                f"relay: cannot listen on {listen}: the port is in use or the address is not "
                "this host's"
            ) from None
        pb_grpc.add_RelayServicer_to_server(relay, server)
        server.start()
        relay.server, relay.address = server, f"{listen.rpartition(':')[0]}:{port}"
        _RELAYS[listen] = relay
        return relay


def stop_relay(listen: str) -> None:
    """Stop the relay on `listen` (the simulated federation's teardown)."""
    with _RELAYS_LOCK:
        relay = _RELAYS.pop(listen, None)
    if relay is not None:
        relay.stop()


def relay_channels(
    parties: Sequence[Hop], tls: TLSFiles | None, relay_listen: str, wait_seconds: float
) -> dict[str, TunnelChannel]:
    """A channel to every party over its stream to the relay on `relay_listen` (started here
    if need be), once every party has connected (or the handshake fails naming the first
    missing one)."""
    relay = serve_relay(relay_listen, tls)
    relay.wait_connected([p.name for p in parties], wait_seconds)
    return {p.name: relay.channel(p.name) for p in parties}
