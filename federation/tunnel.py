"""Unary gRPC calls carried as frames over one long-lived stream (the outbound transport).

In outbound mode (``transport = "outbound"``) a party dials the leader's relay once and keeps a
bidirectional ``Relay.Connect`` stream open; no party listens. Over it travel the Party
service's ordinary unary calls as (call id, method, request bytes, deadline) frames, answered by
(call id, status, details, reply bytes). Three pieces, used by both daemons:

- :class:`Endpoint`: one side of a stream: numbers outgoing calls, matches their replies, fails
  them at their deadline or when the stream breaks (``UNAVAILABLE``, as a dropped connection);
- :class:`TunnelChannel`: enough of ``grpc.Channel`` for ``PartyStub``, so the code that calls
  parties (the leader's sessions, a party's ring forward) runs unchanged over a tunnel;
- :class:`LocalService`: the party's servicer behind its own gate interceptors, called without
  a server, with a :class:`TunnelContext` naming the authenticated caller of the original call
  (the leader the party's TLS connection verified, or the ring predecessor whose handshake
  verified its certificate; federation/relay_crypto.py). Authorization, session ids, leases,
  replay, request limits, deadlines and error texts are the direct mode's.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import CancelledError, Future, InvalidStateError
from functools import partial
from typing import Any, NamedTuple, NoReturn

import grpc

from fedanon.interrupts import future_done_within, wait_in_slices
from fedanon.protos import fedanon_v1_pb2 as pb

log = logging.getLogger(__name__)

#: The stream's keepalive from the party: a vanished relay (or a NAT that dropped the mapping)
#: is noticed within keepalive time + timeout, and the party reconnects. The timeout is the
#: servers' (federation/limits.py): a relay that answers a ping late because its machine is
#: loaded has not vanished, and dropping its stream for it would fail the job's next call.
KEEPALIVE_OPTIONS = [
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]
#: The longest wait between two of a party's attempts to reach the relay (party/outbound.py).
MAX_BACKOFF_SECONDS = 5.0
#: How long the relay holds a call for a party whose stream is down (it broke, or the party's
#: daemon restarts): the party redials within `MAX_BACKOFF_SECONDS`, as a direct party's
#: listening port would take the call at once. A party still away after it is unreachable.
RECONNECT_GRACE_SECONDS = MAX_BACKOFF_SECONDS + 2.0
#: How often an endpoint fails calls past their deadline.
REAP_SECONDS = 0.1
_CODES = {code.value[0]: code for code in grpc.StatusCode}


def status_code(number: int) -> grpc.StatusCode:
    """The gRPC status code with wire number `number` (UNKNOWN for a number gRPC lacks)."""
    return _CODES.get(number, grpc.StatusCode.UNKNOWN)


class TunnelError(grpc.RpcError):  # type: ignore[misc]  # grpc is untyped
    """A tunnelled call's failure, read like the ``grpc.RpcError`` of a direct call."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


def reply_error(reply: pb.TunnelReply) -> TunnelError | None:
    """The failure a reply carries, or None for a reply with status OK."""
    if reply.code == 0:
        return None
    return TunnelError(status_code(reply.code), reply.details)


class Endpoint:
    """One side of a tunnel stream: calls out with their pending replies, frames to send."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.frames: queue.Queue[pb.TunnelFrame | None] = queue.Queue()
        self.pending: dict[int, tuple[float, Future[pb.TunnelReply]]] = {}
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.reaper = threading.Thread(target=self._reap, name=f"tunnel-{label}", daemon=True)
        self.reaper.start()

    def outgoing(self) -> Iterator[pb.TunnelFrame]:
        """The frames to write on the stream, until the endpoint closes."""
        while True:
            frame = self.frames.get()
            if frame is None:
                return
            yield frame

    def send(self, frame: pb.TunnelFrame) -> None:
        if not self.closed.is_set():
            self.frames.put(frame)

    def call(self, frame: pb.TunnelFrame, timeout: float | None) -> Future[pb.TunnelReply]:
        """Send the call `frame` holds (its id and deadline are set here, in place: a relayed
        batch is not copied); its reply, or its failure at the deadline."""
        future: Future[pb.TunnelReply] = Future()
        if self.closed.is_set():
            future.set_exception(_unavailable(self.label))
            return future
        deadline = time.monotonic() + (timeout if timeout is not None else 86400.0)
        with self.lock:
            frame.call.call_id = next(self.ids)
            frame.call.timeout_seconds = max(deadline - time.monotonic(), 0.0)
            self.pending[frame.call.call_id] = (deadline, future)
        self.send(frame)
        return future

    def deliver(self, reply: pb.TunnelReply) -> None:
        """A reply from the other side completes its call (a late or unknown one is dropped)."""
        with self.lock:
            entry = self.pending.pop(reply.call_id, None)
        if entry is not None and not entry[1].done():
            entry[1].set_result(reply)

    def close(self) -> None:
        """The stream is gone: every pending call fails as over a dropped connection."""
        self.closed.set()
        self.frames.put(None)
        with self.lock:
            pending, self.pending = self.pending, {}
        for _deadline, future in pending.values():
            if not future.done():
                future.set_exception(_unavailable(self.label))

    def _reap(self) -> None:
        while not self.closed.wait(REAP_SECONDS):
            now = time.monotonic()
            with self.lock:
                late = [i for i, (deadline, _f) in self.pending.items() if deadline <= now]
                futures = [self.pending.pop(i)[1] for i in late]
            for future in futures:
                if not future.done():
                    error = TunnelError(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
                    future.set_exception(error)


def _unavailable(label: str) -> TunnelError:
    return TunnelError(grpc.StatusCode.UNAVAILABLE, f"the tunnel to {label} is closed")


#: How a tunnel channel sends one call: (method, request, serializer, timeout) -> reply bytes.
Send = Callable[[str, Any, Callable[[Any], bytes], "float | None"], "Future[bytes]"]


class CallFuture(Future[Any]):
    """A tunnelled call's future, waited on as a gRPC call's is (the leader's session cancels
    its heartbeat's calls at close): a cancelled call raises ``grpc.FutureCancelledError`` and
    a wait that runs out ``grpc.FutureTimeoutError``, not concurrent.futures' own errors,
    which no caller written for gRPC expects."""

    def result(self, timeout: float | None = None) -> Any:
        try:
            return super().result(timeout)
        except CancelledError:
            raise grpc.FutureCancelledError() from None
        except TimeoutError:
            if self.done():
                raise  # the call's own failure
            raise grpc.FutureTimeoutError() from None

    def exception(self, timeout: float | None = None) -> BaseException | None:
        try:
            return super().exception(timeout)
        except CancelledError:
            raise grpc.FutureCancelledError() from None
        except TimeoutError:
            raise grpc.FutureTimeoutError() from None


class _UnaryCall:
    """``PartyStub``'s callable for one method (``stub.Sum(request, timeout=...)``, ``.future``)."""

    def __init__(
        self,
        method: str,
        send: Send,
        serialize: Callable[[Any], bytes],
        deserialize: Callable[[bytes], Any],
    ) -> None:
        self.method, self.send = method, send
        self.serialize, self.deserialize = serialize, deserialize

    def __call__(self, request: Any, timeout: float | None = None, **_options: Any) -> Any:
        """The blocking call, waited in slices (the leader's main thread makes it: a wait with
        no timeout would hold a SIGTERM delivered to another thread until the reply)."""
        sent = self.send(self.method, request, self.serialize, timeout)
        wait_in_slices(partial(future_done_within, sent))
        return self.deserialize(sent.result())

    def future(self, request: Any, timeout: float | None = None, **_options: Any) -> Future[Any]:
        raw = self.send(self.method, request, self.serialize, timeout)
        parsed: Future[Any] = CallFuture()

        def done(sent: Future[bytes]) -> None:
            error = sent.exception()
            with contextlib.suppress(InvalidStateError):  # the caller cancelled it meanwhile
                if error is not None:
                    parsed.set_exception(error)
                else:
                    parsed.set_result(self.deserialize(sent.result()))

        raw.add_done_callback(done)
        return parsed


class TunnelChannel:
    """The part of ``grpc.Channel`` a generated stub uses, over a tunnel's `send`."""

    def __init__(self, send: Send) -> None:
        self.send = send

    def unary_unary(
        self,
        method: str,
        request_serializer: Callable[[Any], bytes] | None = None,
        response_deserializer: Callable[[bytes], Any] | None = None,
        **_options: Any,
    ) -> _UnaryCall:
        assert request_serializer is not None and response_deserializer is not None
        short = method.rpartition("/")[2]
        return _UnaryCall(short, self.send, request_serializer, response_deserializer)

    def close(self) -> None:
        """The tunnel outlives a session's channels; closing one closes nothing."""


class Aborted(Exception):
    """`TunnelContext.abort`: ends the call with a status, as grpc's abort does."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code, self.details = code, details


class TunnelContext:
    """The ``grpc.ServicerContext`` a tunnelled call is served with: its caller's certificate
    (verified by the tunnel, never by the relay's say-so) and its deadline."""

    def __init__(self, caller_pem: bytes | None, timeout: float) -> None:
        self.caller_pem = caller_pem
        self.deadline = time.monotonic() + timeout
        self._code: grpc.StatusCode | None = None
        self._details = ""

    def auth_context(self) -> dict[str, list[bytes]]:
        return {} if self.caller_pem is None else {"x509_pem_cert": [self.caller_pem]}

    def time_remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        self._code, self._details = code, details
        raise Aborted(code, details)

    def code(self) -> grpc.StatusCode | None:
        return self._code

    def details(self) -> str:
        return self._details


class _Details(NamedTuple):
    """``grpc.HandlerCallDetails`` for an interceptor."""

    method: str
    invocation_metadata: tuple[tuple[str, str], ...]


class _Collector:
    """Stands in for a server to collect what a generated ``add_*_to_server`` registers."""

    def __init__(self) -> None:
        self.handlers: list[grpc.GenericRpcHandler] = []

    def add_generic_rpc_handlers(self, handlers: Sequence[grpc.GenericRpcHandler]) -> None:
        self.handlers.extend(handlers)

    def add_registered_method_handlers(self, _service: str, _handlers: object) -> None:
        """The generic handlers above already serve every method."""


class LocalService:
    """A servicer behind its server interceptors, served call by call without a server."""

    def __init__(
        self,
        service: str,
        register: Callable[[Any], None],
        interceptors: Sequence[grpc.ServerInterceptor],
    ) -> None:
        collector = _Collector()
        register(collector)
        self.prefix = f"/{service}/"
        self.handlers = collector.handlers
        self.interceptors = list(interceptors)

    def _lookup(self, details: _Details) -> grpc.RpcMethodHandler | None:
        for handler in self.handlers:
            found = handler.service(details)
            if found is not None:
                return found
        return None

    def call(self, method: str, raw: bytes, context: TunnelContext) -> pb.TunnelReply:
        """Serve one call; its reply frame (status and reply bytes), never an exception."""
        details = _Details(self.prefix + method, ())
        continuation: Callable[[Any], Any] = self._lookup
        for interceptor in reversed(self.interceptors):
            continuation = _bind(interceptor, continuation)
        handler = continuation(details)
        if handler is None:
            return _failure(grpc.StatusCode.UNIMPLEMENTED, f"Method not found: {method}")
        try:
            if handler.stream_unary is not None:
                reply = handler.stream_unary(iter([raw]), context)
            else:
                parse = handler.request_deserializer
                reply = handler.unary_unary(raw if parse is None else parse(raw), context)
            serialize = handler.response_serializer
            return pb.TunnelReply(reply=reply if serialize is None else serialize(reply))
        except Aborted as exc:
            return _failure(exc.code, exc.details)
        except Exception:  # as a gRPC server does: the status, the traceback in the log
            log.exception("tunnelled %s failed", method)
            return _failure(grpc.StatusCode.UNKNOWN, "Exception calling application")


def _bind(
    interceptor: grpc.ServerInterceptor, continuation: Callable[[Any], Any]
) -> Callable[[Any], Any]:
    return lambda details: interceptor.intercept_service(continuation, details)


def _failure(code: grpc.StatusCode, details: str) -> pb.TunnelReply:
    return pb.TunnelReply(code=code.value[0], details=details)
