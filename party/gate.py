"""The party's gate: who is calling, and whether the request fits, before it is even parsed.

Every call to the ``fedanon.v1.Party`` service passes here first, as a server interceptor that
checks the caller before the request is read and then receives it as raw bytes:

1. The caller's certificate must name one federation identity (one SAN name, one known role)
   and be a member's certificate (`fedanon.crypto.identity.check_member_profile`); anything
   else is refused with ``UNAUTHENTICATED`` and one log line, never a traceback.
2. The caller must be a peer this party has business with right now (the servicer's
   ``expected_peers``: the leader, the open session's ring predecessor, for ``Status`` the
   party's own operator). Anyone else is refused with ``PERMISSION_DENIED`` before any session
   state is read on its behalf and before its request is buffered (a few flow-control windows
   at most), and learns nothing about the session.
3. The request must fit the servicer's ``request_limit`` for the method, which follows from the
   open job (a secure-sum partial cannot be longer than the statistics of the next
   specialization); larger ones are refused with ``RESOURCE_EXHAUSTED`` before parsing, with
   or without TLS. After a request of `RETURN_MEMORY_FROM` bytes or more the freed memory goes
   back to the kernel.
   Requests beyond the server's ``max_receive_message_length`` never get this far: gRPC refuses
   them from their length prefix, unread.
4. The request must parse as the method's message, with no field or enum value this version
   does not know (bytes that are not a valid message: ``INVALID_ARGUMENT`` and one log line, never
   ``UNKNOWN`` with a traceback from the handler).

Refusals here change no state (not even ``Status``'s last error). Each handler then checks, for
its own message, the exact caller, session id, iteration and job kind.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, Protocol

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.unknown_fields import UnknownFieldSet

from fedanon.allocator import return_freed_memory
from fedanon.crypto.errors import IdentityError
from fedanon.crypto.identity import PeerIdentity
from fedanon.crypto.packed import PackingError
from fedanon.crypto.tls import peer_identity
from fedanon.federation.chunks import unpacked
from fedanon.protos import fedanon_v1_pb2 as pb

log = logging.getLogger(__name__)

SERVICE_PREFIX = "/fedanon.v1.Party/"
# After a request this large (served or refused) the freed heap goes back to the kernel at once:
# gRPC's receive buffers for it would otherwise stay with the daemon between jobs.
RETURN_MEMORY_FROM = 16 << 20


class Admission(Protocol):
    """What the gate asks the servicer."""

    secure: bool

    def expected_peers(self, method: str) -> set[PeerIdentity]: ...

    def request_limit(self, method: str) -> int: ...

    def refuse(
        self, context: grpc.ServicerContext, code: grpc.StatusCode, message: str
    ) -> NoReturn: ...


class PartyGate(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc ships no types
    """Authenticate, authorize and size-check every Party call before its request is parsed."""

    def __init__(self, servicer: Admission) -> None:
        self.servicer = servicer

    def intercept_service(
        self, continuation: Callable[[Any], Any], handler_call_details: Any
    ) -> Any:
        handler = continuation(handler_call_details)
        full_method = handler_call_details.method
        if (
            handler is None
            or handler.unary_unary is None
            or not full_method.startswith(SERVICE_PREFIX)
        ):
            return handler  # the health service: open to any certificate of the federation
        method = full_method[len(SERVICE_PREFIX) :]
        inner, parse = handler.unary_unary, handler.request_deserializer

        def gated(requests: Iterator[bytes], context: grpc.ServicerContext) -> Any:
            self.admit_caller(method, context)  # before a byte of the request is read
            raw = next(requests, None)
            if raw is None:
                self.servicer.refuse(
                    context, grpc.StatusCode.INVALID_ARGUMENT, f"{method} refused: no request"
                )
            try:
                self.admit_size(method, len(raw), context)
                return inner(self.parsed(method, parse, raw, context), context)
            finally:
                if len(raw) >= RETURN_MEMORY_FROM:
                    del raw
                    return_freed_memory()

        # Served as a client stream of raw bytes (the same frames on the wire as a unary call):
        # gRPC reads a unary request whole before the handler runs, a stream's only when asked,
        # so a caller refused by identity never gets its body buffered (HTTP/2 flow control
        # stops it after a window), and the size is known before parsing.
        return grpc.stream_unary_rpc_method_handler(
            gated, request_deserializer=None, response_serializer=handler.response_serializer
        )

    def parsed(
        self,
        method: str,
        parse: Callable[[bytes], Message],
        raw: bytes,
        context: grpc.ServicerContext,
    ) -> Message:
        """The request of an admitted call, or a refusal if `raw` is not a valid message."""
        try:
            request = parse(raw)
            unknown = _unknown_field(request) or _unpackable(request)
        except DecodeError as exc:
            unknown = f"it does not parse ({exc})"
        if unknown is not None:
            self.servicer.refuse(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{method} refused: the request is not a valid message: {unknown}",
            )
        return request

    def admit_caller(self, method: str, context: grpc.ServicerContext) -> None:
        """Refuse a caller whose certificate is malformed or who has no business here now."""
        servicer = self.servicer
        if servicer.secure:
            try:
                caller = peer_identity(context)
            except IdentityError as exc:
                servicer.refuse(
                    context,
                    grpc.StatusCode.UNAUTHENTICATED,
                    f"{method} refused: malformed client certificate ({exc})",
                )
                return
            if caller not in servicer.expected_peers(method):
                servicer.refuse(
                    context,
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"{method} refused: caller '{caller.name}' ({caller.role}) has "
                    "no business with this party now",
                )

    def admit_size(self, method: str, size: int, context: grpc.ServicerContext) -> None:
        """Refuse a request larger than the open job can need (with or without TLS)."""
        servicer = self.servicer
        limit = servicer.request_limit(method)
        if size > limit:
            servicer.refuse(
                context,
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{method} refused: request of {size} bytes exceeds the "
                f"{limit} bytes the open job can need",
            )


def _unpackable(message: Message) -> str | None:
    """Where a union request's packed items are no whole number of items of its item size
    (`fedanon.federation.chunks.unpacked`): bytes no handler could cut into items."""
    if not isinstance(message, pb.UnionRequest):
        return None
    try:
        unpacked(message)
    except PackingError as exc:
        return str(exc)
    return None


def _unknown_field(message: Message) -> str | None:
    """Where `message` (or a message inside it) carries a field, or an enum value, its schema
    does not define (proto3 parses both silently; no handler could make sense of them)."""
    if len(UnknownFieldSet(message)):
        return f"{message.DESCRIPTOR.name} has a field number it does not define"
    for field, value in message.ListFields():
        if field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
            defined = field.enum_type.values_by_number
            numbers = value if field.is_repeated else [value]
            undefined = [n for n in numbers if n not in defined]
            if undefined:
                return f"{message.DESCRIPTOR.name}.{field.name} = {undefined[0]} is not defined"
        if field.type != FieldDescriptor.TYPE_MESSAGE:
            continue
        # Repeated message fields (not maps: no map in the Party service) are sequences.
        children = value if field.is_repeated else [value]
        for child in children:
            found = _unknown_field(child)
            if found is not None:
                return found
    return None
