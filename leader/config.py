"""The leader's job description (``job.toml``).

Example::

    name = "leader"                  # must match the leader's certificate
    taxonomy = "hospital.toml"
    out = "release.csv"
    report = "report.json"
    sum_mode = "ring"                # or "pairwise" (collusion-resistant)
    allow_two_parties = false        # two parties learn each other's counts from the sums
    [lkc]
    L = 4
    K = 20
    C = "0.2"
    score = "infogain"
    drop = ["patient_id"]
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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crypto.parallel import Parallelism
from fedanon.errors import FedanonError
from fedanon.lkc.api import resolve_params
from fedanon.lkc.jobspec import LKCJobSpec
from fedanon.schema import SensitiveValue
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.loader import load_taxonomy
from fedanon.tls import TLSFiles
from fedanon.tomlconfig import need, read_toml, resolve
from party.config import Hop, union_parallelism

if TYPE_CHECKING:
    from leader.drbt import DRBTLeaderJob
    from leader.randomize import RandomizeLeaderJob

SUM_MODES = ("ring", "pairwise")


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
    extra_report: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """Refuse jobs the protocol cannot run safely."""
        if self.sum_mode not in SUM_MODES:
            raise FedanonError(f"sum_mode '{self.sum_mode}' unknown (choose ring or pairwise)")
        names = [p.name for p in self.parties]
        if len(set(names)) != len(names):
            raise FedanonError("a party is listed twice in the ring")
        if len(names) < 2:
            raise FedanonError("a federation needs at least two parties")
        if len(names) < 3 and not self.allow_two_parties:
            raise FedanonError(
                "only two parties: each would learn the other's counts from the global sums; "
                "set allow_two_parties = true (or --allow-two-parties) to accept that"
            )
        if self.union_pad_to < 0:
            raise FedanonError(f"[union] pad_to must be 0 (no padding) or more, "
                               f"got {self.union_pad_to}")


def spec_from_table(lkc: dict[str, Any], taxonomy: TaxonomyFile, where: str) -> LKCJobSpec:
    """The [lkc] section (or the same keys from the CLI), defaults from the taxonomy file."""
    qids = list(lkc.get("qids") or taxonomy.qids or [])
    if not qids:
        raise FedanonError(f"{where}: no QIDs given and the taxonomy lists none")
    if "sensitive" in lkc:
        sensitive = [SensitiveValue(col, str(v)) for col, values in lkc["sensitive"].items()
                     for v in values]
    else:
        sensitive = list(taxonomy.sensitive or [])
    class_column = lkc.get("class", taxonomy.class_column)
    class_values = list(lkc.get("class_values") or taxonomy.class_values or [])
    params = resolve_params(str(lkc.get("preset", "lkc")), len(qids), lkc.get("L"), lkc.get("K"),
                            None if lkc.get("C") is None else str(lkc.get("C")))
    score = str(lkc.get("score") or ("infogain" if class_column else "discernibility"))
    return LKCJobSpec(params, score, qids, sensitive, class_column, class_values,
                      list(lkc.get("drop", [])))


def _parties(data: dict[str, Any], where: str) -> list[Hop]:
    return [Hop(str(need(p, "name", f"{where} [[parties]]")),
                str(need(p, "address", f"{where} [[parties]]")))
            for p in need(data, "parties", where)]


def load_drbt_job(data: dict[str, Any], base: Path, where: str) -> DRBTLeaderJob:
    """A job.toml with a [drbt] section instead of [lkc]."""
    from leader.drbt import DRBTLeaderJob

    section = data["drbt"]
    job = DRBTLeaderJob(
        parties=_parties(data, where),
        tls=TLSFiles.from_config(data.get("tls"), base, where),
        out=resolve(base, str(need(data, "out", where))),  # type: ignore[arg-type]
        id_column=str(need(section, "id_column", f"{where} [drbt]")),
        matrix=str(section.get("matrix", "sparse")),
        k_dims=int(section.get("k_dims", 0)),
        rescale=bool(section.get("rescale", False)),
        clusters=int(section.get("clusters", 3)),
        send_assignment=bool(section.get("send_assignment", False)),
        report=resolve(base, data.get("report")),
        name=str(data.get("name", "leader")),
        rpc_seconds=float(data.get("timeouts", {}).get("rpc_seconds", 120.0)),
    )
    job.check()
    return job


def load_randomize_job(data: dict[str, Any], base: Path, where: str) -> RandomizeLeaderJob:
    """A job.toml with a [randomize] section: QIDs, their agreed domains, method, p or k."""
    from fedanon.algorithms.randomization.jobspec import RandomizeSpec
    from leader.randomize import RandomizeLeaderJob

    section = data["randomize"]
    here = f"{where} [randomize]"
    qids = [str(q) for q in need(section, "qids", here)]
    domains = section.get("domains", {})
    missing = [q for q in qids if q not in domains]
    if missing:
        raise FedanonError(f"{here}.domains: no agreed domain for QID '{missing[0]}'")
    p = section.get("p", "uniform")
    spec = RandomizeSpec(tuple(qids), tuple(tuple(str(v) for v in domains[q]) for q in qids),
                         str(section.get("method", "ra")),
                         None if section.get("attrs") is None else int(section["attrs"]),
                         p if isinstance(p, str) else tuple(float(x) for x in p),
                         bool(section.get("keep_at_parties", False)))
    timeouts = data.get("timeouts", {})
    job = RandomizeLeaderJob(
        parties=_parties(data, where),
        tls=TLSFiles.from_config(data.get("tls"), base, where),
        spec=spec,
        out=resolve(base, data.get("out")),
        report=resolve(base, data.get("report")),
        name=str(data.get("name", "leader")),
        sum_mode=str(data.get("sum_mode", "ring")),
        allow_two_parties=bool(data.get("allow_two_parties", False)),
        rpc_seconds=float(timeouts.get("rpc_seconds", 60.0)),
        union_seconds=float(timeouts.get("union_seconds", 600.0)),
        union_parallelism=union_parallelism(data, where),
        union_pad_to=int(data.get("union", {}).get("pad_to", 0)),
    )
    job.check()
    return job


def load_job(path: str | Path) -> LeaderJob | DRBTLeaderJob | RandomizeLeaderJob:
    """Read job.toml: an LKC job ([lkc]), a vertical DRBT job ([drbt]) or randomization."""
    data, base = read_toml(path)
    where = str(path)
    if "drbt" in data:
        return load_drbt_job(data, base, where)
    if "randomize" in data:
        return load_randomize_job(data, base, where)
    taxonomy = load_taxonomy(resolve(base, str(need(data, "taxonomy", where))))  # type: ignore[arg-type]
    parties = _parties(data, where)
    job = LeaderJob(
        name=str(data.get("name", "leader")),
        taxonomy=taxonomy,
        spec=spec_from_table(need(data, "lkc", where), taxonomy, f"{where} [lkc]"),
        parties=parties,
        tls=TLSFiles.from_config(data.get("tls"), base, where),
        out=resolve(base, str(need(data, "out", where))),  # type: ignore[arg-type]
        report=resolve(base, data.get("report")),
        sum_mode=str(data.get("sum_mode", "ring")),
        allow_two_parties=bool(data.get("allow_two_parties", False)),
        rpc_seconds=float(data.get("timeouts", {}).get("rpc_seconds", 60.0)),
        union_seconds=float(data.get("timeouts", {}).get("union_seconds", 600.0)),
        union_parallelism=union_parallelism(data, where),
        union_pad_to=int(data.get("union", {}).get("pad_to", 0)),
    )
    job.check()
    return job
