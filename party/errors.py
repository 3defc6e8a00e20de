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


def status_of(exc: Exception) -> grpc.StatusCode:
    """The status a refused step answers: out of order, or a request whose content is wrong."""
    if isinstance(exc, ProtocolError):
        return grpc.StatusCode.FAILED_PRECONDITION
    return grpc.StatusCode.INVALID_ARGUMENT
