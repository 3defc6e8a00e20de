"""The leader's job description (``job.toml``).

Example::

    name = "leader"                  # must match the leader's certificate
    taxonomy = "hospital.toml"
    out = "release.csv"
    report = "report.json"
    sum_mode = "ring"                # or "pairwise" (collusion-resistant)
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
    [timeouts]
    rpc_seconds = 60                 # deadline of each call (a ring sum gets +25% per party)
    union_seconds = 600              # deadline of a union phase (encryption of every record)
    [union]
    workers = 0                      # processes opening the union's records: 0 = one per CPU
                                     # (at most 8), 1 = none
    min_records = 4096               # fewer records are opened in-process
    pad_to = 0                       # > 0: every party pads its union batch with dummies to
                                     # this many items, hiding its record count (must be at
                                     # least the largest party's record count)
    mode = "layered"                 # or "shuffle": secret-shared shuffle, symmetric crypto
                                     # only, fast; weaker collusion threshold (docs/leakage.md)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fedanon.algorithms.drbt.matrices import MATRICES
from fedanon.algorithms.randomization.anonymity import attribute_probabilities
from fedanon.algorithms.tds.api import PRESETS, resolve_params
from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.algorithms.tds.scores import SCORES
from fedanon.algorithms.tds.suppression import parse_suppression_share
from fedanon.configschema import (
    Address,
    ConfigError,
    Either,
    Flag,
    InputFile,
    Integer,
    Key,
    Names,
    Number,
    Numbers,
    OutputFile,
    Proportion,
    Table,
    TableOf,
    Tables,
    Text,
    Values,
    load,
)
from fedanon.crypto.errors import CryptoError
from fedanon.crypto.identity import load_identity_files
from fedanon.crypto.parallel import Parallelism
from fedanon.errors import FedanonError
from fedanon.federation.chunks import DEFAULT_CHUNK_BYTES, MIB, MIN_CHUNK_BYTES
from fedanon.federation.tls import TLS_SCHEMA, TLSFiles
from fedanon.leader.federation import SUM_PROTOCOLS
from fedanon.leader.session import check_ring_job
from fedanon.party.config import (
    DAY,
    MAX_MESSAGE_MB,
    TRANSPORTS,
    UNION_KEYS,
    Hop,
    check_transport,
    union_parallelism,
)
from fedanon.schema import SensitiveValue
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.loader import load_taxonomy
from fedanon.tomlconfig import resolve

if TYPE_CHECKING:
    from fedanon.leader.drbt import DRBTLeaderJob
    from fedanon.leader.randomize import RandomizeLeaderJob

SUM_MODES = tuple(SUM_PROTOCOLS)  # "ring", "pairwise"
UNION_MODES = ("layered", "shuffle")
#: The most parties one job may name (each is a connection, a ring hop and a union layer).
MAX_PARTIES = 256


def _lkc_model(lkc: dict[str, Any], path: str, where: str) -> None:
    """The lkc model (the default preset) needs L, K and C."""
    if lkc["preset"] == "lkc":
        for key in ("L", "K", "C"):
            if lkc[key] is None:
                raise ConfigError(
                    f"{where}: missing key '{path}.{key}' (LKC-privacy needs L, K and C)"
                )


LKC_SCHEMA = Table(
    {
        "L": Key(Integer(1, 2**31 - 1)),
        "K": Key(Integer(1, 2**63 - 1)),
        "C": Key(Proportion()),
        "preset": Key(Text(choices=PRESETS), default="lkc"),
        "score": Key(Text(choices=SCORES)),
        "qids": Key(Names(min_items=1)),
        "sensitive": Key(
            TableOf(Names(min_items=1), expected='a table of column = ["value", ...]')
        ),
        "class": Key(Text()),
        "class_values": Key(Names(min_items=1)),
        "drop": Key(Names(), default=[]),
        "suppress": Key(Proportion(zero_to_one=True)),
        "suppressed": Key(Text(choices=("root", "drop")), default="root"),
    },
    checks=(_lkc_model,),
)

DRBT_SCHEMA = Table(
    {
        "id_column": Key(Text(), required=True),
        "matrix": Key(Text(choices=MATRICES), default="sparse"),
        "k_dims": Key(Integer(0, 2**31 - 1), default=0),
        "rescale": Key(Flag(), default=False),
        "clusters": Key(Integer(1, 2**31 - 1), default=3),
        "send_assignment": Key(Flag(), default=False),
    }
)


def _randomize_plan(section: dict[str, Any], path: str, where: str) -> None:
    """A domain for each QID and none for other columns; attrs and p fit the method and the
    number of QIDs (p a distribution over the QIDs)."""
    qids, domains = section["qids"], section["domains"] or {}
    for column in qids:
        if column not in domains:
            raise ConfigError(f"{where}: {path}.domains: no agreed domain for QID '{column}'")
    for column, values in domains.items():
        key = f"{path}.domains.{column}"
        if column not in qids:
            raise ConfigError(f"{where}: {key}: '{column}' is not a QID")
        if len(values) < 2:
            raise ConfigError(
                f"{where}: {key}: QID column '{column}': the agreed domain has {len(values)} "
                "value(s); randomizing needs at least 2"
            )
    attrs, p = section["attrs"], section["p"]
    if section["method"] == "ra":
        if attrs not in (None, 1):
            raise ConfigError(f'{where}: {path}.attrs: applies to method = "enhanced" only')
        if not isinstance(p, str):
            try:  # the list's own checks need only the number of QIDs
                attribute_probabilities(p, [np.zeros(0)] * len(qids), qids)
            except FedanonError as exc:
                raise ConfigError(f"{where}: {path}.p: {exc}") from None
        return
    if not isinstance(p, str) or p != "uniform":
        raise ConfigError(f'{where}: {path}.p: applies to method = "ra" only')
    if attrs is not None and attrs > len(qids):
        raise ConfigError(
            f"{where}: {path}.attrs: expected at most the number of QIDs ({len(qids)}), got {attrs}"
        )


RANDOMIZE_SCHEMA = Table(
    {
        "qids": Key(Names(min_items=1), required=True),
        "domains": Key(TableOf(Values(), expected='a table of column = ["value", "value", ...]')),
        "method": Key(Text(choices=("ra", "enhanced")), default="ra"),
        "attrs": Key(Integer(1, 2**31 - 1)),
        "p": Key(
            Either(Text(choices=("uniform", "optimal")), Numbers(Number(0, 1))), default="uniform"
        ),
        "keep_at_parties": Key(Flag(), default=False),
    },
    checks=(_randomize_plan,),
)


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


JOB_SCHEMA = Table(
    {
        "name": Key(Text(), default="leader"),
        "taxonomy": Key(InputFile()),
        "out": Key(OutputFile()),  # required except for randomize kept at the parties
        "report": Key(OutputFile()),
        "sum_mode": Key(Text(choices=SUM_MODES), default="ring"),
        "transport": Key(Text(choices=TRANSPORTS), default="direct"),
        "relay_listen": Key(Address()),
        "allow_two_parties": Key(Flag(), default=False),
        "lkc": Key(LKC_SCHEMA),
        "drbt": Key(DRBT_SCHEMA),
        "randomize": Key(RANDOMIZE_SCHEMA),
        "parties": Key(
            Tables(
                Table({"name": Key(Text(), required=True), "address": Key(Address())}),
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


@dataclass
class LeaderJob:
    """Everything the leader needs for one distributed LKC run."""

    name: str
    taxonomy: TaxonomyFile
    spec: LKCJobSpec
    parties: list[Hop]
    tls: TLSFiles | None
    out: Path
    report: Path | None = None
    sum_mode: str = "ring"
    allow_two_parties: bool = False
    rpc_seconds: float = 60.0
    union_seconds: float = 600.0
    union_parallelism: Parallelism = field(default_factory=Parallelism.configured)
    union_pad_to: int = 0
    union_mode: str = "layered"
    union_chunk_bytes: int = DEFAULT_CHUNK_BYTES  # bound on one union message's items
    extra_report: dict[str, Any] = field(default_factory=dict)
    relay_listen: str | None = None  # transport = "outbound": the relay's address

    def check(self) -> None:
        """Refuse jobs the protocol cannot run safely."""
        check_ring_job(
            self.parties,
            self.sum_mode,
            self.allow_two_parties,
            self.union_pad_to,
            "the other's counts from the global sums",
        )
        if self.union_mode not in UNION_MODES:
            raise FedanonError(
                f"[union] mode '{self.union_mode}' unknown (choose layered or shuffle)"
            )
        if self.union_mode == "shuffle" and len(self.parties) < 3:
            raise FedanonError(
                '[union] mode = "shuffle" needs at least three parties (with '
                "two, each would know every permutation)"
            )


def spec_from_table(lkc: dict[str, Any], taxonomy: TaxonomyFile, where: str) -> LKCJobSpec:
    """The [lkc] section (or the same keys from the CLI), defaults from the taxonomy file."""
    qids = list(lkc.get("qids") or taxonomy.qids or [])
    if not qids:
        raise FedanonError(f"{where}: no QIDs given and the taxonomy lists none")
    if "sensitive" in lkc:
        sensitive = [
            SensitiveValue(col, str(v)) for col, values in lkc["sensitive"].items() for v in values
        ]
    else:
        sensitive = list(taxonomy.sensitive or [])
    clash = [s.column for s in sensitive if s.column in qids]
    if clash:
        raise FedanonError(f"{where}: sensitive column '{clash[0]}' is also a QID")
    class_column = lkc.get("class", taxonomy.class_column)
    drop = list(lkc.get("drop", []))
    for role, column in [("dropped", c) for c in drop] + [("class", class_column)]:
        if column in qids:
            raise FedanonError(f"{where}: {role} column '{column}' is also a QID")
    class_values = list(lkc.get("class_values") or taxonomy.class_values or [])
    params = resolve_params(
        str(lkc.get("preset", "lkc")),
        len(qids),
        lkc.get("L"),
        lkc.get("K"),
        None if lkc.get("C") is None else str(lkc.get("C")),
    )
    score = str(lkc.get("score") or ("infogain" if class_column else "discernibility"))
    return LKCJobSpec(
        params,
        score,
        qids,
        sensitive,
        class_column,
        class_values,
        drop,
        parse_suppression_share(lkc.get("suppress")),
        str(lkc.get("suppressed") or "root"),
    )


def _parties(data: dict[str, Any]) -> list[Hop]:
    return [Hop(p["name"], p["address"] or "") for p in data["parties"]]


JOB_KIND_SECTIONS = ("lkc", "drbt", "randomize")


def _kind(data: dict[str, Any], where: str) -> str:
    """The job kind: exactly one of the sections [lkc], [drbt] and [randomize]."""
    given = [kind for kind in JOB_KIND_SECTIONS if data[kind] is not None]
    if len(given) != 1:
        raise ConfigError(
            f"{where}: give exactly one of the sections "
            + ", ".join(f"[{kind}]" for kind in JOB_KIND_SECTIONS)
        )
    if given[0] == "lkc" and data["taxonomy"] is None:
        raise ConfigError(f"{where}: missing key 'taxonomy' (an LKC job needs a file path)")
    if given[0] != "randomize" and data["out"] is None:
        raise ConfigError(f"{where}: missing key 'out' (a file path)")
    return given[0]


def load_drbt_job(data: dict[str, Any], base: Path, tls: TLSFiles | None) -> DRBTLeaderJob:
    """A job.toml with a [drbt] section instead of [lkc]."""
    from fedanon.leader.drbt import DRBTLeaderJob

    section = data["drbt"]
    return DRBTLeaderJob(
        parties=_parties(data),
        tls=tls,
        out=resolve(base, data["out"]),
        id_column=section["id_column"],
        matrix=section["matrix"],
        k_dims=section["k_dims"],
        rescale=section["rescale"],
        clusters=section["clusters"],
        send_assignment=section["send_assignment"],
        report=resolve(base, data["report"]),
        name=data["name"],
        rpc_seconds=data["timeouts"]["rpc_seconds"] or 120.0,
    )


def load_randomize_job(
    data: dict[str, Any], base: Path, tls: TLSFiles | None
) -> RandomizeLeaderJob:
    """A job.toml with a [randomize] section: QIDs, their agreed domains, method, p or k."""
    from fedanon.algorithms.randomization.jobspec import RandomizeSpec
    from fedanon.leader.randomize import RandomizeLeaderJob

    section = data["randomize"]
    qids = section["qids"]
    domains = section["domains"]
    p = section["p"]
    spec = RandomizeSpec(
        tuple(qids),
        tuple(tuple(domains[q]) for q in qids),
        section["method"],
        section["attrs"],
        p if isinstance(p, str) else tuple(p),
        section["keep_at_parties"],
    )
    return RandomizeLeaderJob(
        parties=_parties(data),
        tls=tls,
        spec=spec,
        out=resolve(base, data["out"]),
        report=resolve(base, data["report"]),
        name=data["name"],
        sum_mode=data["sum_mode"],
        allow_two_parties=data["allow_two_parties"],
        rpc_seconds=data["timeouts"]["rpc_seconds"] or 60.0,
        union_seconds=data["timeouts"]["union_seconds"],
        union_parallelism=union_parallelism(data["union"]),
        union_pad_to=data["union"]["pad_to"],
        union_chunk_bytes=chunk_bytes(data["union"]),
    )


def chunk_bytes(section: dict[str, Any]) -> int:
    """[union] chunk_mb as bytes."""
    return int(section["chunk_mb"] * MIB)


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


def load_job(path: str | Path) -> LeaderJob | DRBTLeaderJob | RandomizeLeaderJob:
    """Read job.toml: an LKC job ([lkc]), a vertical DRBT job ([drbt]) or randomization
    ([randomize]), checked completely (form, ranges, files, certificate, cross-key rules)
    before any connection is made; every problem is one line naming the file."""
    where = str(path)
    data, base = load(path, JOB_SCHEMA)
    kind = _kind(data, where)
    tls = leader_tls(data, base, where)
    try:
        job = _build(kind, data, base, tls, where)
        job.relay_listen = data["relay_listen"]  # None unless transport = "outbound"
        job.check()
    except ConfigError:
        raise
    except FedanonError as exc:  # a rule of the job itself, not of one key
        raise ConfigError(f"{where}: {exc}") from None
    return job


def _build(
    kind: str, data: dict[str, Any], base: Path, tls: TLSFiles | None, where: str
) -> LeaderJob | DRBTLeaderJob | RandomizeLeaderJob:
    """The job of a validated job.toml."""
    if kind == "drbt":
        return load_drbt_job(data, base, tls)
    if kind == "randomize":
        return load_randomize_job(data, base, tls)
    taxonomy = load_taxonomy(resolve(base, data["taxonomy"]))
    lkc = {k: v for k, v in data["lkc"].items() if v is not None}
    return LeaderJob(
        name=data["name"],
        taxonomy=taxonomy,
        spec=spec_from_table(lkc, taxonomy, "lkc"),
        parties=_parties(data),
        tls=tls,
        out=resolve(base, data["out"]),
        report=resolve(base, data["report"]),
        sum_mode=data["sum_mode"],
        allow_two_parties=data["allow_two_parties"],
        rpc_seconds=data["timeouts"]["rpc_seconds"] or 60.0,
        union_seconds=data["timeouts"]["union_seconds"],
        union_parallelism=union_parallelism(data["union"]),
        union_pad_to=data["union"]["pad_to"],
        union_mode=data["union"]["mode"],
        union_chunk_bytes=chunk_bytes(data["union"]),
    )
