"""A retried hop gets the first answer again: a party never runs one protocol step twice.

The ring forwards with retries (a next hop that is briefly unreachable is tried again), and a
retry can reach a party that did receive the first copy: the connection broke after delivery,
or the first copy is still being served further down the ring. Executing the copy would apply
the instruction twice (or, refused as "stale", blame the wrong party); for the union it would
strip and forward the whole batch again. So each session keeps, per step kind ("sum", one per
union phase), the last call: its iteration, a digest of the request bytes and its outcome.

* same iteration, same bytes: wait for the first call if it is still running, then answer with
  its reply or its error (same status code and text);
* a refusal by this party itself (its message starts with ``party <own name>:``: nothing was
  executed) is not remembered, so a refused message can never block the genuine one; nor is a
  party further down the ring being unreachable (``UNAVAILABLE``: it died or restarted): the
  leader sends the message again once that party has rejoined (party/rejoin.py), and this hop
  then forwards the same vector again (party/sums.py keeps its last one); other failures further
  down the ring are remembered;
* same iteration, other bytes: refused (a message for an iteration must never change);
* a later iteration: a new call replaces the old one (only the latest is ever retried);
* an earlier iteration: served without the cache, so the session refuses it as stale.

Only the latest call per kind is kept, so the memory held is one reply per kind.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import grpc
from google.protobuf.message import Message

Reply = TypeVar("Reply", bound=Message)
Refuse = Callable[[grpc.ServicerContext, grpc.StatusCode, str], None]


@dataclass
class _Call:
    iteration: int
    digest: bytes
    done: threading.Event = field(default_factory=threading.Event)
    reply: Message | None = None
    error: tuple[grpc.StatusCode, str] | None = None


def request_digest(request: Message) -> bytes:
    """SHA-256 of the request's deterministic serialization."""
    return hashlib.sha256(request.SerializeToString(deterministic=True)).digest()


class AnswerOnce:
    """The last call of each step kind in one session, and its outcome."""

    def __init__(self, owner: str) -> None:
        self._own_prefix = f"party {owner}:"
        self._lock = threading.Lock()
        self._calls: dict[str, _Call] = {}

    def answer(
        self,
        kind: str,
        iteration: int,
        request: Message,
        context: grpc.ServicerContext,
        refuse: Refuse,
        work: Callable[[], Reply],
    ) -> Reply:
        """Run `work` for the first copy of (kind, iteration); replay its outcome for copies.

        `work` ends a failed call through ``context.abort`` (the servicer's refusal), whose
        status code and text are kept for the copies. `refuse` ends a copy that cannot be
        answered (other bytes, or the first call still running at the copy's deadline).
        """
        digest = request_digest(request)
        with self._lock:
            previous = self._calls.get(kind)
            first = previous is None or iteration > previous.iteration
            if first:
                call = self._calls[kind] = _Call(iteration, digest)
            else:
                assert previous is not None
                call = previous
        if first:
            try:
                return self._run(call, context, work)
            finally:
                if call.error is not None and (
                    call.error[1].startswith(self._own_prefix)
                    or call.error[0] == grpc.StatusCode.UNAVAILABLE
                ):
                    self._forget(kind, call, previous)
        if iteration < call.iteration:
            return work()  # stale: the session refuses it; nothing to cache
        if call.digest != digest:
            refuse(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"a different message for iteration {iteration} of {kind} (a retry must "
                "repeat the first message exactly)",
            )
        remaining = context.time_remaining()
        if not call.done.wait(None if remaining is None else max(remaining - 0.2, 0.0)):
            refuse(
                context,
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"iteration {iteration} of {kind} is still being served (retry of a "
                "call in progress)",
            )
        if call.error is not None:
            context.abort(*call.error)
        assert call.reply is not None
        return call.reply  # type: ignore[return-value]

    def _forget(self, kind: str, call: _Call, previous: _Call | None) -> None:
        """Put back the call this refused one replaced (if nothing newer came in since)."""
        with self._lock:
            if self._calls.get(kind) is call:
                if previous is None:
                    del self._calls[kind]
                else:
                    self._calls[kind] = previous

    @staticmethod
    def _run(call: _Call, context: grpc.ServicerContext, work: Callable[[], Reply]) -> Reply:
        try:
            call.reply = work()
            return call.reply
        except BaseException:
            details = context.details()
            text = details.decode(errors="replace") if isinstance(details, bytes) else details
            call.error = (context.code() or grpc.StatusCode.INTERNAL, text or "failed")
            raise
        finally:
            call.done.set()
