"""Stand-ins the party's unit tests share: a gRPC servicer context without TLS, and a party
configuration for a servicer built in the test process (no daemon, no files read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc

from fedanon.party.config import PartyConfig


class Aborted(Exception):
    """What ``context.abort`` raises in place of gRPC's own exception: (code, details)."""


class Context:
    """The part of a gRPC servicer context the party uses (no TLS: no peer identity): abort,
    and the status it set (which the answer-once cache keeps for retried copies)."""

    def __init__(self) -> None:
        self._status: tuple[grpc.StatusCode, str] | None = None

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self._status = (code, details)
        raise Aborted(code, details)

    def code(self) -> grpc.StatusCode | None:
        return None if self._status is None else self._status[0]

    def details(self) -> str | None:
        return None if self._status is None else self._status[1]


def party_config(name: str = "hospital-b", **changes: Any) -> PartyConfig:
    """`name`'s configuration, led by "leader", last in the ring, without TLS or a taxonomy
    unless `changes` say otherwise; its data file is never read (the test passes the table)."""
    fields: dict[str, Any] = {
        "name": name,
        "listen": "127.0.0.1:9",
        "data": Path("unused.csv"),
        "taxonomy": None,
        "leader": "leader",
        "next_hop": None,
        "tls": None,
    }
    return PartyConfig(**{**fields, **changes})
