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
    max_message_mb = 128           # largest request accepted at all (at least twice the
                                   # union's chunk size, 4 MiB by default); refused unread above it
    handshake_seconds = 10         # a connection must complete its TLS handshake this fast
    max_connections = 256          # open connections at once; more are closed when accepted
    idle_seconds = 300             # a connection without calls this long is closed

    [policy]                       # this hospital's privacy floor (absent: any job is served)
    min_L = 2                      # smallest L a job may ask (absent: 1)
    min_K = 5                      # smallest K (absent: 1)
    max_C = 0.5                    # largest C (absent: 1)
    qids = ["age", "sex"]          # columns a job may use as QIDs (absent: any)
    never_release = ["patient_id"] # columns no job may release, in any form
    job_kinds = ["lkc", "drbt"]    # job kinds served (absent: every kind the daemon knows)
    leader = "leader"              # the leader allowed to ask (same as `leader` above)

Every key is checked against :data:`PARTY_SCHEMA` before use: an unknown key, a wrong type or
an out-of-range value is one error line naming the file and the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedanon.configschema import (
    Address,
    ConfigError,
    Integer,
    Key,
    Number,
    Table,
    Text,
    validate,
)
from fedanon.crypto.parallel import DEFAULT_MIN_RECORDS, Parallelism
from fedanon.federation.limits import ConnectionLimits
from fedanon.federation.tls import TLS_SCHEMA, TLSFiles
from fedanon.party.policy import POLICY_SCHEMA, Policy
from fedanon.tomlconfig import read_toml, resolve

DAY = 86400.0

#: ``[union]`` keys shared by party.toml and job.toml.
UNION_KEYS = {
    "workers": Key(Integer(0, 1024), default=0),
    "min_records": Key(Integer(0, 2**31 - 1), default=DEFAULT_MIN_RECORDS),
}

# Leader-layer keys a daemon generates while idle (crypto/idle_keys.py). A fixed number, not one
# per record: how many keys are ready shows in how long sealing takes, and a pool sized by the
# table would let that time hint at the record count that `pad_to` hides. 65,536 keys: about
# 13 MB and 1.3 s of one core, made once the daemon has been idle for 2 s.
DEFAULT_IDLE_KEYS = 65536

# The daemon's own [union] keys: the job's (above) and the idle-made key pool's size.
PARTY_UNION_KEYS = {
    **UNION_KEYS,
    "idle_keys": Key(Integer(0, 2**31 - 1), default=DEFAULT_IDLE_KEYS),
}

PARTY_SCHEMA = Table(
    {
        "name": Key(Text(), required=True),
        "listen": Key(Address(), required=True),
        "data": Key(Text(what="a file path"), required=True),
        "taxonomy": Key(Text(what="a file path")),
        "leader": Key(Text()),
        "output_dir": Key(Text(what="a directory path")),
        "delimiter": Key(Text(what="a one-character string")),
        "next_hop": Key(
            Table({"name": Key(Text(), required=True), "address": Key(Address(), required=True)})
        ),
        "tls": Key(TLS_SCHEMA),
        "timeouts": Key(
            Table(
                {
                    "rpc_seconds": Key(Number(0, DAY, low_open=True), default=60.0),
                    "lease_seconds": Key(Number(0, DAY, low_open=True), default=30.0),
                    "connect_retries": Key(Integer(0, 100), default=5),
                    "backoff_seconds": Key(Number(0, 60), default=0.2),
                    "wait_next_hop_seconds": Key(Number(0, DAY), default=0.0),
                }
            ),
            default={},
        ),
        "union": Key(Table(PARTY_UNION_KEYS), default={}),
        "limits": Key(
            Table(
                {
                    "max_message_mb": Key(Number(0, 4096, low_open=True), default=128.0),
                    # Connection limits (federation/transport.py ConnectionLimits).
                    "handshake_seconds": Key(Number(0.5, 600), default=10.0),
                    "max_connections": Key(Integer(4, 65536), default=256),
                    "idle_seconds": Key(Number(1, DAY), default=300.0),
                }
            ),
            default={},
        ),
        "policy": Key(POLICY_SCHEMA),
    }
)


@dataclass(frozen=True)
class Hop:
    """A peer's certificate name and address."""

    name: str
    address: str


def union_parallelism(section: dict[str, Any]) -> Parallelism:
    """A validated [union] section (party.toml and job.toml): the union's worker processes."""
    return Parallelism.configured(section["workers"], section["min_records"])


def _leader(data: dict[str, Any], where: str) -> str:
    """The one leader accepted: ``leader``, or ``[policy] leader`` (they must agree)."""
    top = data["leader"]
    policy = (data["policy"] or {}).get("leader")
    if top is not None and policy is not None and top != policy:
        raise ConfigError(f"{where}: leader '{top}' and policy.leader '{policy}' differ; give one")
    return top or policy or "leader"


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
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    policy: Policy = field(default_factory=lambda: Policy(configured=False))
    idle_keys: int = DEFAULT_IDLE_KEYS  # leader-layer keys made while idle (0: none)

    @classmethod
    def load(cls, path: str | Path) -> PartyConfig:
        raw, base = read_toml(path)
        where = str(path)
        data = validate(raw, PARTY_SCHEMA, where)
        if data["delimiter"] is not None and len(data["delimiter"]) != 1:
            raise ConfigError(
                f"{where}: delimiter: expected a one-character string, got {data['delimiter']!r}"
            )
        hop = data["next_hop"]
        timeouts = data["timeouts"]
        return cls(
            name=data["name"],
            listen=data["listen"],
            data=resolve(base, data["data"]),
            taxonomy=resolve(base, data["taxonomy"]),
            leader=_leader(data, where),
            next_hop=Hop(hop["name"], hop["address"]) if hop else None,
            tls=TLSFiles.from_config(data["tls"], base, where),
            delimiter=data["delimiter"],
            rpc_seconds=timeouts["rpc_seconds"],
            lease_seconds=timeouts["lease_seconds"],
            connect_retries=timeouts["connect_retries"],
            backoff_seconds=timeouts["backoff_seconds"],
            wait_next_hop_seconds=timeouts["wait_next_hop_seconds"],
            output_dir=resolve(base, data["output_dir"]),
            union_parallelism=union_parallelism(data["union"]),
            max_message_mb=data["limits"]["max_message_mb"],
            connections=ConnectionLimits(
                data["limits"]["handshake_seconds"],
                data["limits"]["max_connections"],
                data["limits"]["idle_seconds"],
            ),
            policy=Policy.from_table(data["policy"]),
            idle_keys=data["union"]["idle_keys"],
        )
