"""The party daemon's configuration (``party.toml``).

Example::

    name = "hospital-a"            # must match the name in this party's certificate
    listen = "127.0.0.1:50051"
    data = "hospital-a.csv"        # this party's private table
    taxonomy = "hospital.toml"     # needed for LKC jobs; a DRBT-only party may omit it
    leader = "leader"              # certificate name of the only leader accepted
    output_dir = "out"             # DRBT cluster assignments sent by the leader go here
    [next_hop]                     # the next party in the ring (absent on the last party)
    name = "hospital-b"
    address = "127.0.0.1:50052"
    [tls]
    ca = "certs/ca.pem"
    cert = "certs/hospital-a.pem"
    key = "certs/hospital-a.key"
    [timeouts]
    rpc_seconds = 60               # deadline of calls this party makes (the ring forward)
    lease_seconds = 30             # a session's lease: renewed by every message of its leader
                                   # (heartbeats included); only a lapsed session is replaced
    connect_retries = 5            # forwarding to an unavailable next hop: retries ...
    backoff_seconds = 0.2          # ... with exponential backoff from this delay
    wait_next_hop_seconds = 0      # > 0: refuse to start unless the next hop answers by then
    [union]
    workers = 0                    # processes sealing the union's records: 0 = one per CPU
                                   # (at most 8), 1 = none
    min_records = 4096             # fewer records are sealed in-process
    [limits]
    max_message_mb = 128           # largest request accepted at all (the union batch of every
                                   # party's records must fit); refused unread above it
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crypto.parallel import DEFAULT_MIN_RECORDS, Parallelism
from fedanon.errors import FedanonError
from fedanon.tls import TLSFiles
from fedanon.tomlconfig import need, read_toml, resolve


@dataclass(frozen=True)
class Hop:
    """A peer's certificate name and address."""

    name: str
    address: str


def union_parallelism(data: dict[str, Any], where: str) -> Parallelism:
    """The [union] section (party.toml and job.toml): worker processes for the union's layer."""
    section = data.get("union", {})
    try:
        return Parallelism.configured(int(section.get("workers", 0)),
                                      int(section.get("min_records", DEFAULT_MIN_RECORDS)))
    except ValueError as exc:
        raise FedanonError(f"{where} [union]: {exc}") from exc


@dataclass(frozen=True)
class PartyConfig:
    name: str
    listen: str
    data: Path
    taxonomy: Path | None
    leader: str
    next_hop: Hop | None
    tls: TLSFiles | None
    delimiter: str | None = None
    rpc_seconds: float = 60.0
    lease_seconds: float = 30.0
    connect_retries: int = 5
    backoff_seconds: float = 0.2
    wait_next_hop_seconds: float = 0.0
    output_dir: Path | None = None
    union_parallelism: Parallelism = field(default_factory=Parallelism.configured)
    max_message_mb: float = 128.0

    @classmethod
    def load(cls, path: str | Path) -> PartyConfig:
        data, base = read_toml(path)
        where = str(path)
        hop = data.get("next_hop")
        timeouts = data.get("timeouts", {})
        return cls(
            name=str(need(data, "name", where)),
            listen=str(need(data, "listen", where)),
            data=resolve(base, str(need(data, "data", where))),  # type: ignore[arg-type]
            taxonomy=resolve(base, data.get("taxonomy")),
            leader=str(data.get("leader", "leader")),
            next_hop=Hop(str(need(hop, "name", f"{where} [next_hop]")),
                         str(need(hop, "address", f"{where} [next_hop]"))) if hop else None,
            tls=TLSFiles.from_config(data.get("tls"), base, where),
            delimiter=data.get("delimiter"),
            rpc_seconds=float(timeouts.get("rpc_seconds", 60.0)),
            lease_seconds=float(timeouts.get("lease_seconds", 30.0)),
            connect_retries=int(timeouts.get("connect_retries", 5)),
            backoff_seconds=float(timeouts.get("backoff_seconds", 0.2)),
            wait_next_hop_seconds=float(timeouts.get("wait_next_hop_seconds", 0.0)),
            output_dir=resolve(base, data.get("output_dir")),
            union_parallelism=union_parallelism(data, where),
            max_message_mb=float(data.get("limits", {}).get("max_message_mb", 128.0)),
        )
