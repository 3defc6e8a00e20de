"""The party's protocol error, shared by the sessions, the sum protocols and the servicer."""

from __future__ import annotations

import grpc

from fedanon.errors import FedanonError


class ProtocolError(FedanonError):
    """A message the open session cannot take (answered ``FAILED_PRECONDITION``)."""


class NotExpected(ProtocolError):
    """A message that is not the open session's next one: stale, replayed, out of order, for
    another session or after its end. Refused without any state change (the servicer's
    ``reject``), where other errors of a step are the open session's recorded failures."""


class CannotResume(NotExpected):
    """A restarted party cannot take up the interrupted union in its round (it already let
    something leave for that round that it must not make twice): answered ``ABORTED``, which
    tells the leader to start the union again as a new round (leader/rejoin.py)."""


def status_of(exc: Exception) -> grpc.StatusCode:
    """The status a refused step answers: out of order, or a request whose content is wrong
    (``ABORTED``: the union must start again, `CannotResume`)."""
    if isinstance(exc, CannotResume):
        return grpc.StatusCode.ABORTED
    if isinstance(exc, ProtocolError):
        return grpc.StatusCode.FAILED_PRECONDITION
    return grpc.StatusCode.INVALID_ARGUMENT
