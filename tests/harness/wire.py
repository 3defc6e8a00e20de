"""The one wire recorder of the tests: every message a role receives or answers on its gRPC ends.

The leakage, view and privacy tests (distributed LKC, randomization, vertical DRBT) are about what
crosses the wire, so the recorder sits on the wire ends, never inside the protocol code:

* :class:`ServedRecorder` is a server interceptor: for each unary call a role serves it records
  the request on arrival, with the caller's name from the mutual-TLS certificate (the same
  :func:`fedanon.federation.transport.peer_name` the servicer authorizes with), then the reply the
  role sent back (``None`` when the handler aborted). Health checks are recorded too.
* :class:`ReplyRecorder` is a client interceptor on a role's own channels (a party's next hop, the
  leader's channels): it notes every call the role makes and records each reply it receives.

Both write to one :class:`WireLog`, in arrival order. :class:`UnaryServerRecorder` is the base of
the server interceptors, also of the tests that alter a message in flight instead of recording
it (tests/distributed/test_union_guards.py, test_union_tamper.py).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from fedanon.crypto.packed import Packed
from fedanon.federation.chunks import unpacked
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_channel, peer_name
from fedanon.protos import fedanon_v1_pb2 as pb


def short_method(full: str) -> str:
    """``/fedanon.v1.Party/Sum`` -> ``Sum``."""
    return full.rsplit("/", 1)[-1]


def union_items(message: pb.UnionRequest | pb.UnionReply) -> list[bytes]:
    """A union message's items, one by one (they travel packed: `packed`, `item_size`)."""
    return unpacked(message).items()


def set_union_items(message: pb.UnionRequest | pb.UnionReply, items: list[bytes]) -> None:
    """Replace a union message's items (of one size) in flight."""
    packed = Packed.of(items)
    message.packed, message.item_size = packed.data, packed.item_size


def first_strip_fetch(method: str, request: Any) -> bool:
    """Whether a served call is the leader's fetch of the first chunk of the union's STRIP
    output (where the tamper tests change what a party answers)."""
    return (
        method == "Union"
        and request.phase == pb.UNION_PHASE_FETCH
        and request.fetch_phase == pb.UNION_PHASE_STRIP
        and request.chunk == 0
    )


class UnaryServerRecorder(grpc.ServerInterceptor):
    """Base of the server interceptors: `around` runs in place of every unary handler served.

    Subclasses record or alter what they need and must call ``inner(request, context)`` to serve
    the call; `method` is the short RPC name (e.g. ``"Sum"``).
    """

    def around(
        self,
        method: str,
        request: Any,
        context: grpc.ServicerContext,
        inner: Callable[[Any, grpc.ServicerContext], Any],
    ) -> Any:
        raise NotImplementedError

    def intercept_service(self, continuation: Callable, handler_call_details: Any) -> Any:
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary
        method = short_method(handler_call_details.method)

        def behaviour(request: Any, context: grpc.ServicerContext) -> Any:
            return self.around(method, request, context, inner)

        return grpc.unary_unary_rpc_method_handler(
            behaviour,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


@dataclass
class Received:
    """One message received by `role`: a request it served or a reply to a call it made."""

    role: str  # "leader" or a party name
    method: str  # short RPC name, e.g. "Sum"
    kind: str  # "request" (served) or "reply" (to our own call)
    peer: str | None  # the authenticated caller of a request, or the callee of a reply
    message: Any  # a protobuf message whose class follows from `method` and `kind`
    answer: Any = None  # for a served request: the reply sent back (None: aborted or pending)

    @property
    def data(self) -> bytes:
        """The message as it crossed the wire."""
        return bytes(self.message.SerializeToString())

    @property
    def answer_data(self) -> bytes | None:
        """The reply sent back to a served request, as it crossed the wire (None if none)."""
        return None if self.answer is None else bytes(self.answer.SerializeToString())


@dataclass
class WireLog:
    """Thread-safe record of everything received (server threads append concurrently)."""

    items: list[Received] = field(default_factory=list)
    calls_made: list[tuple[str, str, str]] = field(default_factory=list)  # role, peer, method
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, item: Received) -> None:
        with self.lock:
            self.items.append(item)

    def of(
        self, role: str | None = None, method: str | None = None, kind: str | None = None
    ) -> list[Received]:
        with self.lock:
            return [
                r
                for r in self.items
                if (role is None or r.role == role)
                and (method is None or r.method == method)
                and (kind is None or r.kind == kind)
            ]

    def messages(self) -> list[bytes]:
        """Every recorded message as it crossed the wire: requests, their answers, replies."""
        with self.lock:
            items = list(self.items)
        return [r.data for r in items] + [d for r in items if (d := r.answer_data) is not None]


class ServedRecorder(UnaryServerRecorder):
    """Records each unary call `role` serves: caller, request, and the reply it sent."""

    def __init__(self, role: str, log: WireLog) -> None:
        self.role = role
        self.log = log

    def around(
        self,
        method: str,
        request: Any,
        context: grpc.ServicerContext,
        inner: Callable[[Any, grpc.ServicerContext], Any],
    ) -> Any:
        item = Received(self.role, method, "request", peer_name(context), request)
        self.log.add(item)
        answer = inner(request, context)
        with self.log.lock:
            item.answer = answer
        return answer


class ReplyRecorder(grpc.UnaryUnaryClientInterceptor):
    """Notes each call `role` makes to `peer` on one channel and records each successful reply."""

    def __init__(self, role: str, peer: str, log: WireLog) -> None:
        self.role = role
        self.peer = peer
        self.log = log

    def intercept_unary_unary(
        self, continuation: Callable, client_call_details: Any, request: Any
    ) -> Any:
        method = short_method(client_call_details.method)
        with self.log.lock:
            self.log.calls_made.append((self.role, self.peer, method))
        outcome = continuation(client_call_details, request)
        with contextlib.suppress(grpc.RpcError):
            self.log.add(Received(self.role, method, "reply", self.peer, outcome.result()))
        return outcome


def recording_channel_factory(role: str, log: WireLog) -> Callable[..., grpc.Channel]:
    """A drop-in ``make_channel`` whose channels record every call `role` makes and its reply."""

    def factory(
        address: str,
        expected_name: str,
        tls: TLSFiles | None,
        options: Sequence[tuple[str, int]] = (),
    ) -> grpc.Channel:
        channel = make_channel(address, expected_name, tls, options)
        return grpc.intercept_channel(channel, ReplyRecorder(role, expected_name, log))

    return factory
