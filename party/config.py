"""The party daemon's configuration (``party.toml``).

Example::

    name = "hospital-a"            # must match the name in this party's certificate
    listen = "127.0.0.1:50051"
    # transport = "outbound"       # listen on no port: dial the leader's relay instead
    # relay = "leader.example:50050"  # (outbound only; then no `listen`, no next_hop.address)
    data = "hospital-a.csv"        # this party's private table
    taxonomy = "hospital.toml"     # needed for LKC jobs; a DRBT-only party may omit it
    leader = "leader"              # certificate name of the only leader accepted
    output_dir = "out"             # DRBT cluster assignments sent by the leader go here
    state_dir = "state"            # the sealed session a restart rejoins (absent: no rejoin)
    [next_hop]                     # the next party in the ring (absent on the last party)
    name = "hospital-b"
    address = "127.0.0.1:50052"
    [tls]
    ca = "certs/ca.pem"
    cert = "certs/hospital-a.pem"
    key = "certs/hospital-a.key"
    [timeouts]
    rpc_seconds = 60               # deadline of calls this party makes (the ring forward)
    lease_seconds = 30             # a session's lease (2 to 86400): renewed by every message of
                                   # its leader (heartbeats included); only a lapsed session is
                                   # replaced
    connect_retries = 5            # forwarding to an unavailable next hop: retries ...
    backoff_seconds = 0.2          # ... with exponential backoff from this delay
    wait_next_hop_seconds = 0      # > 0: refuse to start unless the next hop answers by then
    [union]
    workers = 0                    # processes sealing the union's records: 0 = one per CPU
                                   # (at most 16), 1 = none
    min_records = 4096             # fewer records are sealed in-process
    [limits]
    max_message_mb = 128           # largest request accepted at all (1 to 2047; at least twice
                                   # the union's chunk size, 4 MiB by default); refused unread
                                   # above it
    handshake_seconds = 10         # a connection must complete its TLS handshake this fast
    max_connections = 256          # open connections at once; more are closed when accepted
    idle_seconds = 300             # a connection without calls this long is closed

    [table]                        # where LKC counting runs (docs/engines.md); absent: here
    engine = "dask"                # "local" (this process; the default unless a key below is
                                   # given) or "dask" (row shards on Dask workers)
    shards = 8                     # row shards (a Parquet dataset: at most one per file)
    scheduler = "10.0.0.5:8786"    # a Dask scheduler, over Dask's TLS with [tls]'s files
                                   # (absent: a local cluster in the daemon)
    workers = 0                    # the local cluster's processes (0: threads of the daemon)

    [policy]                       # this hospital's privacy floor (absent: any job is served)
    min_L = 2                      # smallest L a job may ask (absent: 1)
    min_K = 5                      # smallest K (absent: 1)
    max_C = 0.5                    # largest C (absent: 1)
    qids = ["age", "sex"]          # columns a job may use as QIDs (absent: any)
    never_release = ["patient_id"] # columns no job may release, in any form
    job_kinds = ["lkc", "drbt"]    # job kinds served (absent: every kind the daemon knows)
    leader = "leader"              # the leader allowed to ask (same as `leader` above)
    allow_exclusion = false        # true: an LKC job may rerun without this party if it drops
                                   # out for good (docs/leakage.md: what that reveals)

Every key is checked against :data:`PARTY_SCHEMA` before use: an unknown key, a wrong type, an
out-of-range value or a missing file is one error line naming the file and the key. Every range
is listed, with its reason, in docs/distributed.md ("Checked configuration").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedanon.algorithms.tds.engines import ENGINES, EngineSettings
from fedanon.configschema import (
    Address,
    Character,
    ConfigError,
    InputData,
    InputFile,
    Integer,
    Key,
    Number,
    OutputDir,
    Table,
    Text,
    check_value,
    load,
)
from fedanon.crypto.parallel import Parallelism
from fedanon.federation.config import (
    DAY,
    MAX_MESSAGE_MB,
    MAX_WORKERS,
    TRANSPORTS,
    UNION_KEYS,
    Hop,
    check_transport,
    union_parallelism,
)
from fedanon.federation.limits import ConnectionLimits
from fedanon.federation.tls import TLS_SCHEMA, TLSFiles
from fedanon.party.policy import POLICY_SCHEMA, Policy
from fedanon.tomlconfig import resolve

HOUR = 3600.0

#: The shortest session lease: the leader renews it every quarter lease, so a shorter one lets a
#: single slow heartbeat end a live job (and any other leader take the party over).
MIN_LEASE_SECONDS = 2.0
#: The smallest request limit: the control messages and a union message of the smallest chunk
#: (1 KiB, job.toml [union] chunk_mb) fit with room to spare.
MIN_MESSAGE_MB = 1.0
#: Idle-made leader-layer keys: ~200 bytes each, so 2^20 keys hold ~210 MB.
MAX_IDLE_KEYS = 1 << 20

# Leader-layer keys a daemon generates while idle (crypto/idle_keys.py). A fixed number, not one
# per record: how many keys are ready shows in how long sealing takes, and a pool sized by the
# table would let that time hint at the record count that `pad_to` hides. 65,536 keys: about
# 13 MB and 1.3 s of one core, made once the daemon has been idle for 2 s.
DEFAULT_IDLE_KEYS = 65536

# The daemon's own [union] keys: the job's (above) and the idle-made key pool's size.
PARTY_UNION_KEYS = {
    **UNION_KEYS,
    "idle_keys": Key(Integer(0, MAX_IDLE_KEYS), default=DEFAULT_IDLE_KEYS),
}
PARTY_UNION_SCHEMA = Table(PARTY_UNION_KEYS)


def _distinct_names(data: dict[str, Any], path: str, where: str) -> None:
    """A party neither forwards to itself nor takes its leader's name."""
    hop = data["next_hop"]
    if hop is not None and hop["name"] == data["name"]:
        raise ConfigError(f"{where}: next_hop.name: '{hop['name']}' is this party's own name")
    if data["leader"] is not None and data["leader"] == data["name"]:
        raise ConfigError(f"{where}: leader: '{data['leader']}' is this party's own name")


def _transport(data: dict[str, Any], path: str, where: str) -> None:
    hop = data["next_hop"]
    addressed = [("listen", data["listen"] is not None)]
    if hop is not None:
        addressed.append(("next_hop.address", hop["address"] is not None))
    check_transport(where, data, addressed, ("relay", data["relay"] is not None))


TIMEOUTS_SCHEMA = Table(
    {
        "rpc_seconds": Key(Number(1, DAY), default=60.0),
        "lease_seconds": Key(Number(MIN_LEASE_SECONDS, DAY), default=30.0),
        "connect_retries": Key(Integer(0, 100), default=5),
        "backoff_seconds": Key(Number(0.01, 60), default=0.2),
        "wait_next_hop_seconds": Key(Number(0, HOUR), default=0.0),
    }
)

LIMITS_SCHEMA = Table(
    {
        "max_message_mb": Key(Number(MIN_MESSAGE_MB, MAX_MESSAGE_MB), default=128.0),
        # Connection limits (federation/limits.py ConnectionLimits).
        "handshake_seconds": Key(Number(0.5, 600), default=10.0),
        "max_connections": Key(Integer(4, 65536), default=256),
        "idle_seconds": Key(Number(1, DAY), default=300.0),
    }
)

#: Row shards of a Dask-backed party: far above any cluster's cores, below a task-graph bomb.
MAX_SHARDS = 4096


def _engine_keys(section: dict[str, Any], path: str, where: str) -> None:
    """The Dask keys belong to the Dask engine (which they imply when `engine` is absent); a
    scheduler and a local cluster's size exclude each other; a scheduler's scheme is tls://
    (or tcp:// for a party without TLS)."""
    given = [key for key in ("scheduler", "workers", "shards") if section[key] is not None]
    if section["engine"] is None:
        section["engine"] = "dask" if given else "local"
    if section["engine"] != "dask":
        if given:
            raise ConfigError(f'{where}: {path}.{given[0]}: only with {path}.engine = "dask"')
        return
    scheduler = section["scheduler"]
    if scheduler is not None:
        if section["workers"] is not None:
            raise ConfigError(
                f"{where}: {path}.workers: a local cluster's size, but {path}.scheduler "
                "names a cluster; give one"
            )
        scheme, sep, _ = scheduler.rpartition("://")
        if sep and scheme not in ("tls", "tcp"):
            raise ConfigError(
                f"{where}: {path}.scheduler: scheme '{scheme}://' (expected tls:// or tcp://)"
            )


TABLE_SCHEMA = Table(
    {
        "engine": Key(Text(choices=tuple(ENGINES))),
        "shards": Key(Integer(1, MAX_SHARDS)),
        "scheduler": Key(Address()),
        "workers": Key(Integer(0, MAX_WORKERS)),
    },
    checks=(_engine_keys,),
)

PARTY_SCHEMA = Table(
    {
        "name": Key(Text(), required=True),
        "listen": Key(Address()),  # required with transport = "direct" (_transport)
        "transport": Key(Text(choices=TRANSPORTS), default="direct"),
        "relay": Key(Address()),
        "data": Key(InputData(), required=True),
        "taxonomy": Key(InputFile()),
        "leader": Key(Text()),
        "output_dir": Key(OutputDir()),
        "state_dir": Key(OutputDir()),
        "delimiter": Key(Character()),
        "next_hop": Key(Table({"name": Key(Text(), required=True), "address": Key(Address())})),
        "tls": Key(TLS_SCHEMA),
        "timeouts": Key(TIMEOUTS_SCHEMA, default={}),
        "union": Key(PARTY_UNION_SCHEMA, default={}),
        "limits": Key(LIMITS_SCHEMA, default={}),
        "policy": Key(POLICY_SCHEMA),
        "table": Key(TABLE_SCHEMA, default={}),
    },
    checks=(_transport, _distinct_names),
)

#: PartyConfig fields checked against their party.toml key, also when built without a file.
_RANGED_FIELDS = {
    "rpc_seconds": ("timeouts", TIMEOUTS_SCHEMA),
    "lease_seconds": ("timeouts", TIMEOUTS_SCHEMA),
    "connect_retries": ("timeouts", TIMEOUTS_SCHEMA),
    "backoff_seconds": ("timeouts", TIMEOUTS_SCHEMA),
    "wait_next_hop_seconds": ("timeouts", TIMEOUTS_SCHEMA),
    "max_message_mb": ("limits", LIMITS_SCHEMA),
    "idle_keys": ("union", PARTY_UNION_SCHEMA),
}


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
    state_dir: Path | None = None  # the sealed session for rejoin (party/session_store.py)
    union_parallelism: Parallelism = field(default_factory=Parallelism.configured)
    max_message_mb: float = 128.0
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    policy: Policy = field(default_factory=lambda: Policy(configured=False))
    idle_keys: int = DEFAULT_IDLE_KEYS  # leader-layer keys made while idle (0: none)
    engine: EngineSettings = field(default_factory=EngineSettings)  # [table]: LKC counting
    transport: str = "direct"  # or "outbound": no listening port, a stream to `relay`
    relay: str | None = None  # the leader's relay (outbound only)

    def __post_init__(self) -> None:
        """The ranges of party.toml hold for a configuration built in code too (a daemon with
        a lease of 1e-9 s or a 100-byte message limit is disarmed however it was made)."""
        for name, (section, table) in _RANGED_FIELDS.items():
            key = f"{section}.{name}"
            check_value(table.keys[name].rule, getattr(self, name), key, "party configuration")

    @classmethod
    def load(cls, path: str | Path) -> PartyConfig:
        where = str(path)
        data, base = load(path, PARTY_SCHEMA)
        hop = data["next_hop"]
        timeouts = data["timeouts"]
        tls = TLSFiles.from_config(data["tls"], base, where)
        engine = _engine(data["table"], tls, where)
        table = resolve(base, data["data"])
        if table.is_dir() and engine.name != "dask":
            raise ConfigError(
                f"{where}: data: {table} is a directory (a Parquet dataset needs "
                '[table] engine = "dask")'
            )
        return cls(
            name=data["name"],
            listen=data["listen"] or "",
            data=table,
            taxonomy=resolve(base, data["taxonomy"]),
            leader=_leader(data, where),
            next_hop=Hop(hop["name"], hop["address"] or "") if hop else None,
            tls=tls,
            delimiter=data["delimiter"],
            rpc_seconds=timeouts["rpc_seconds"],
            lease_seconds=timeouts["lease_seconds"],
            connect_retries=timeouts["connect_retries"],
            backoff_seconds=timeouts["backoff_seconds"],
            wait_next_hop_seconds=timeouts["wait_next_hop_seconds"],
            output_dir=resolve(base, data["output_dir"]),
            state_dir=resolve(base, data["state_dir"]),
            union_parallelism=union_parallelism(data["union"]),
            max_message_mb=data["limits"]["max_message_mb"],
            connections=ConnectionLimits(
                data["limits"]["handshake_seconds"],
                data["limits"]["max_connections"],
                data["limits"]["idle_seconds"],
            ),
            policy=Policy.from_table(data["policy"]),
            idle_keys=data["union"]["idle_keys"],
            engine=engine,
            transport=data["transport"],
            relay=data["relay"],
        )


def _engine(section: dict[str, Any], tls: TLSFiles | None, where: str) -> EngineSettings:
    """[table] as engine settings. A scheduler without a scheme is dialled over Dask's TLS
    with the party's own certificate (plain tcp:// only for a party without TLS); a party with
    TLS never sends its rows to a tcp:// one."""
    scheduler = section["scheduler"]
    if scheduler is not None and "://" not in scheduler:
        scheduler = ("tcp://" if tls is None else "tls://") + scheduler
    if scheduler is not None and scheduler.startswith("tcp://") and tls is not None:
        raise ConfigError(
            f"{where}: table.scheduler: '{scheduler}' would carry the party's rows unencrypted; "
            "use tls://"
        )
    return EngineSettings(
        name=section["engine"],
        shards=section["shards"] or 1,
        scheduler=scheduler,
        workers=section["workers"] or 0,
        tls=None if tls is None else (tls.ca, tls.cert, tls.key),
    )
