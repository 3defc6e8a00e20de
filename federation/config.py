"""Configuration both daemons read: a peer's address, the ``[union]`` keys party.toml and
job.toml share, the ranges they share, and how a launcher ties a daemon to its own life.

It lives in the federation plumbing because the leader may not import the party
(docs/architecture.md): what party.toml and job.toml have in common is defined once, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fedanon.configschema import Address, ConfigError, Integer, Key
from fedanon.crypto.parallel import DEFAULT_MIN_RECORDS, Parallelism

DAY = 86400.0
#: The largest message gRPC can take: its sizes are signed 32-bit (2 GiB - 1 byte).
MAX_MESSAGE_MB = 2047.0
#: Worker processes of one union: more than any machine's cores is a fork bomb, not a setting.
MAX_WORKERS = 256

#: ``[union]`` keys shared by party.toml and job.toml.
UNION_KEYS = {
    "workers": Key(Integer(0, MAX_WORKERS), default=0),
    "min_records": Key(Integer(1, 2**31 - 1), default=DEFAULT_MIN_RECORDS),
}

#: Set by a simulated federation to its own pid: the party daemon it starts dies with that
#: process (party/daemon.py reads it; leader/sim.py sets it).
DIE_WITH_PARENT = "FEDANON_DIE_WITH_PARENT"


@dataclass(frozen=True)
class Hop:
    """A peer's certificate name and address."""

    name: str
    address: str


def union_parallelism(section: dict[str, Any]) -> Parallelism:
    """A validated [union] section (party.toml and job.toml): the union's worker processes."""
    return Parallelism.configured(section["workers"], section["min_records"])


#: How a party is reached: it listens (direct), or it dials the leader's relay (outbound).
TRANSPORTS = ("direct", "outbound")


def check_transport(
    where: str,
    data: dict[str, Any],
    addressed: list[tuple[str, bool]],
    relay: tuple[str, bool],
) -> None:
    """Keys that hold addresses exactly where the file's `transport` needs them: `addressed`
    are the listen and hop addresses (key, given) only direct mode uses, `relay` the relay's;
    outbound mode needs TLS (the relay knows a party by its certificate alone)."""
    key, given = relay
    transport = data["transport"]
    if transport == "direct":
        missing = next((k for k, present in addressed if not present), None)
        if missing is not None:
            raise ConfigError(f"{where}: missing key '{missing}' ({Address().expected})")
        if given:
            raise ConfigError(f'{where}: {key}: only with transport = "outbound"')
        return
    extra = next((k for k, present in addressed if present), None)
    if extra is not None:
        raise ConfigError(
            f'{where}: {extra}: unused with transport = "outbound" (parties listen on no '
            "port; the relay routes every call); remove it"
        )
    if not given:
        raise ConfigError(
            f"{where}: missing key '{key}' ({Address().expected}; "
            'transport = "outbound" needs it)'
        )
    if (data["tls"] or {}).get("insecure", False):
        raise ConfigError(
            f'{where}: tls.insecure: transport = "outbound" needs TLS (the relay and the '
            "parties know each other by their certificates alone)"
        )
