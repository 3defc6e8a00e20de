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
    supersede_idle_seconds = 2     # a new session from the leader replaces one idle this long
    connect_retries = 5            # forwarding to an unavailable next hop: retries ...
    backoff_seconds = 0.2          # ... with exponential backoff from this delay
    wait_next_hop_seconds = 0      # > 0: refuse to start unless the next hop answers by then
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fedanon.tls import TLSFiles
from fedanon.tomlconfig import need, read_toml, resolve


@dataclass(frozen=True)
class Hop:
    """A peer's certificate name and address."""

    name: str
    address: str


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
    supersede_idle_seconds: float = 2.0
    connect_retries: int = 5
    backoff_seconds: float = 0.2
    wait_next_hop_seconds: float = 0.0
    output_dir: Path | None = None

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
            supersede_idle_seconds=float(timeouts.get("supersede_idle_seconds", 2.0)),
            connect_retries=int(timeouts.get("connect_retries", 5)),
            backoff_seconds=float(timeouts.get("backoff_seconds", 0.2)),
            wait_next_hop_seconds=float(timeouts.get("wait_next_hop_seconds", 0.0)),
            output_dir=resolve(base, data.get("output_dir")),
        )
