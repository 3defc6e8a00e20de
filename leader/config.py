"""The leader's job description (``job.toml``).

Example::

    name = "leader"                  # must match the leader's certificate
    taxonomy = "hospital.toml"
    out = "release.csv"
    report = "report.json"
    sum_mode = "ring"                # or "pairwise" (collusion-resistant), "sparse" (pairwise,
                                     # 2*ceil(log2 n) mask partners per party); absent: the
                                     # kind's default (ring; pairwise for c45, kactus, evaluate)
    # transport = "outbound"         # parties dial this leader's relay and listen on no port;
    # relay_listen = "0.0.0.0:50050" # then [[parties]] have no address
    allow_two_parties = false        # two parties learn each other's counts from the sums
    [lkc]
    L = 4
    K = 20
    C = "0.2"
    score = "infogain"
    drop = ["patient_id"]
    # suppress = 0.02        # optional record-suppression budget; suppressed = "root" | "drop"
    # qids, sensitive = { diagnosis = ["HIV"] }, class, class_values: default to the taxonomy
    [[parties]]                      # in ring order
    name = "hospital-a"
    address = "127.0.0.1:50051"
    [tls]
    ca = "certs/ca.pem"
    cert = "certs/leader.pem"
    key = "certs/leader.key"
    # A vertical DRBT job has a [drbt] section instead of [lkc]:
    #   [drbt]
    #   id_column = "patient_id"
    #   matrix = "sparse"            # or "gaussian"
    #   k_dims = 0                   # per party; 0 = ceil(d_i / 2)
    #   clusters = 3
    #   send_assignment = true
    # A randomization job (RA / enhanced RA) has a [randomize] section instead:
    #   [randomize]
    #   qids = ["age", "sex"]
    #   method = "ra"                # or "enhanced"
    #   attrs = 2                    # enhanced: attributes redrawn per record
    #   p = "optimal"                # ra: "uniform", "optimal" or [0.6, 0.4]
    #   keep_at_parties = false      # true: no union, each party keeps its randomized table
    #   [randomize.domains]          # the agreed domain of every QID (histogram order)
    #   age = ["17", "18", "19"]
    #   sex = ["Female", "Male"]
    # A federated C4.5 job has a [c45] section instead (docs/federated_classification.md):
    #   [c45]
    #   features = ["age", "workclass", "education"]
    #   numeric = ["age"]            # threshold tests; the others are categorical
    #   class = "class"
    #   min_leaf = 2                 # C4.5's -m; cf = 0.25 (-c), prune, subtree_raising, narrow
    # A federated kACTUS job has a [kactus] section instead (docs/federated_classification.md):
    #   [kactus]
    #   qids = ["age", "workclass", "education"]
    #   class = "class"
    #   k = 50                       # marker = "?", numeric = "median"|"mean", prune, narrow,
    #                                # seed (the leader's draws; default secret random bits)
    [timeouts]
    rpc_seconds = 60                 # deadline of each call (a ring sum gets +25% per party)
    union_seconds = 600              # deadline of a union phase (encryption of every record)
    rejoin_seconds = 60              # LKC: wait this long for a party that restarts mid-job,
                                     # then resume it by replay (0: fail at once)
    [union]
    workers = 0                      # processes opening the union's records: 0 = one per CPU
                                     # (at most 16), 1 = none
    min_records = 4096               # fewer records are opened in-process
    pad_to = 0                       # > 0: every party pads its union batch with dummies to
                                     # this many items, hiding its record count (must be at
                                     # least the largest party's record count)
    mode = "layered"                 # or "shuffle": secret-shared shuffle, symmetric crypto
                                     # only, fast; weaker collusion threshold (docs/leakage.md)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fedanon.configschema import (
    Address,
    ConfigError,
    Flag,
    InputFile,
    Integer,
    Key,
    Number,
    OutputFile,
    Rule,
    Table,
    Tables,
    Text,
    load,
)
from fedanon.crypto.errors import CryptoError
from fedanon.crypto.identity import load_identity_files
from fedanon.errors import FedanonError
from fedanon.federation.chunks import DEFAULT_CHUNK_BYTES, MIB, MIN_CHUNK_BYTES
from fedanon.federation.config import DAY, MAX_MESSAGE_MB, TRANSPORTS, UNION_KEYS, check_transport
from fedanon.federation.tls import TLS_SCHEMA, TLSFiles
from fedanon.leader.kind import JobFile, LeaderJob, LeaderKind
from fedanon.leader.kinds import LEADER_KINDS
from fedanon.leader.rejoin import DEFAULT_REJOIN_SECONDS
from fedanon.leader.ring_settings import SUM_MODES, UNION_MODES

#: The most parties one job may name (each is a connection, a ring hop and a union layer).
MAX_PARTIES = 256


def _ring(data: dict[str, Any], path: str, where: str) -> None:
    """Parties named and addressed once each, none named like the leader, at least two (every
    kind; how many more a kind needs is its job's own check, run by load_job)."""
    for key in ("name", "address"):
        seen: set[str] = set()
        for i, party in enumerate(data["parties"]):
            if party[key] is None:  # an address outbound mode does without (_transport)
                continue
            if party[key] in seen:
                raise ConfigError(
                    f"{where}: parties[{i}].{key}: '{party[key]}' is listed twice in the ring"
                )
            seen.add(party[key])
    for i, party in enumerate(data["parties"]):
        if party["name"] == data["name"]:
            raise ConfigError(f"{where}: parties[{i}].name: '{party['name']}' is the leader's name")
    if len(data["parties"]) < 2:
        raise ConfigError(
            f"{where}: parties: a federation needs at least two parties, got {len(data['parties'])}"
        )


def _transport(data: dict[str, Any], path: str, where: str) -> None:
    """Direct: every party's address; outbound: the relay's listen address and no party's."""
    parties = enumerate(data["parties"])
    addressed = [(f"parties[{i}].address", p["address"] is not None) for i, p in parties]
    check_transport(where, data, addressed, ("relay_listen", data["relay_listen"] is not None))


class _Absent(Rule):
    """The rule of a kind's section that the file does not give (never applied)."""

    def check(self, value: Any, path: str, source: str) -> Any:
        raise AssertionError(f"{path}: the section's kind was not loaded")


_ABSENT = _Absent()


def job_schema(raw: Mapping[str, Any] | None = None) -> Table:
    """The schema of job.toml: the keys every job has and one section per registered kind.

    Given the parsed file `raw`, only the kinds whose sections it gives are loaded (their
    modules import their algorithms and pandas); the others' sections keep their place in the
    schema, so naming none or two, or a misspelt one, reads as before, but as they are absent
    their rules are never applied."""
    kinds = {
        section: Key(LEADER_KINDS[section].schema if raw is None or section in raw else _ABSENT)
        for section in LEADER_KINDS
    }
    return Table(
        {
            "name": Key(Text(), default="leader"),
            "taxonomy": Key(InputFile()),
            "out": Key(OutputFile()),  # each kind says whether it needs one (LeaderKind.required)
            "report": Key(OutputFile()),
            "sum_mode": Key(Text(choices=SUM_MODES)),  # absent: the kind's (RingSettings)
            "transport": Key(Text(choices=TRANSPORTS), default="direct"),
            "relay_listen": Key(Address()),
            "allow_two_parties": Key(Flag(), default=False),
            **kinds,
            "parties": Key(
                Tables(
                    Table(
                        {
                            "name": Key(Text(), required=True),
                            "address": Key(Address()),  # direct only (_transport)
                        }
                    ),
                    max_items=MAX_PARTIES,
                ),
                required=True,
            ),
            "tls": Key(TLS_SCHEMA),
            "timeouts": Key(
                Table(
                    {
                        "rpc_seconds": Key(Number(1, DAY)),
                        "union_seconds": Key(Number(1, 7 * DAY), default=600.0),
                        "rejoin_seconds": Key(Number(0, DAY), default=DEFAULT_REJOIN_SECONDS),
                    }
                ),
                default={},
            ),
            "union": Key(
                Table(
                    {
                        **UNION_KEYS,
                        "pad_to": Key(Integer(0, 2**31 - 1), default=0),
                        "mode": Key(Text(choices=UNION_MODES), default="layered"),
                        # Items per union message, in MiB: at most half of every party's
                        # [limits] max_message_mb (the parties refuse a larger one).
                        "chunk_mb": Key(
                            Number(MIN_CHUNK_BYTES / MIB, MAX_MESSAGE_MB / 2),
                            default=DEFAULT_CHUNK_BYTES / MIB,
                        ),
                    }
                ),
                default={},
            ),
        },
        checks=(_transport, _ring),
    )


def _kind(data: dict[str, Any], where: str) -> LeaderKind:
    """The job kind: exactly one of the registered kinds' sections, with the keys it needs."""
    given = [section for section in LEADER_KINDS if data[section] is not None]
    if len(given) != 1:
        raise ConfigError(
            f"{where}: give exactly one of the sections "
            + ", ".join(f"[{section}]" for section in LEADER_KINDS)
        )
    kind = LEADER_KINDS[given[0]]
    for key, why in kind.required.items():
        if data[key] is None:
            raise ConfigError(f"{where}: missing key '{key}' ({why})")
    return kind


def leader_tls(data: dict[str, Any], base: Path, where: str) -> TLSFiles | None:
    """The validated [tls] section, whose certificate must be a leader certificate naming this
    job's `name`: a party's certificate given as the leader's would be refused only by the
    parties, after the job was sent, or serve a party's identity as the leader's."""
    files = TLSFiles.from_config(data["tls"], base, where)
    if files is None:
        return None
    try:
        identity = load_identity_files(files.cert, files.key)
    except CryptoError as exc:
        raise ConfigError(f"{where}: tls.cert: {exc}") from None
    if identity.role != "leader" or identity.name != data["name"]:
        raise ConfigError(
            f"{where}: tls.cert: {files.cert} is the {identity.role} certificate of "
            f"'{identity.name}'; the leader needs a leader certificate naming '{data['name']}'"
        )
    return files


def load_job(path: str | Path) -> LeaderJob:
    """Read job.toml: one job of a registered kind (an LKC job's [lkc], a vertical DRBT job's
    [drbt], randomization's [randomize]), checked completely (form, ranges, files, certificate,
    cross-key rules) before any connection is made; every problem is one line naming the file."""
    where = str(path)
    data, base = load(path, job_schema)
    kind = _kind(data, where)
    tls = leader_tls(data, base, where)
    try:
        job: LeaderJob = kind.load(JobFile(data, base, tls, where))
        job.relay_listen = data["relay_listen"]  # None unless transport = "outbound"
        job.check()
    except ConfigError:
        raise
    except FedanonError as exc:  # a rule of the job itself, not of one key
        raise ConfigError(f"{where}: {exc}") from None
    return job
