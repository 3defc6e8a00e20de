"""The party's protocol error, shared by the sessions, the sum protocols and the servicer."""

from __future__ import annotations

import grpc

from fedanon.errors import FedanonError


class ProtocolError(FedanonError):
    """A message out of order or for another session (answered ``FAILED_PRECONDITION``)."""


def status_of(exc: Exception) -> grpc.StatusCode:
    """The status a refused step answers: out of order, or a request whose content is wrong."""
    if isinstance(exc, ProtocolError):
        return grpc.StatusCode.FAILED_PRECONDITION
    return grpc.StatusCode.INVALID_ARGUMENT
