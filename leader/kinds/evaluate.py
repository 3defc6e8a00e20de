"""The leader's side of the federated utility protocol: the LKC paper's BE, CE and UE of a
release without pooling a record (docs/federated_classification.md).

Every party splits its own table by the job's seed (federation/evaluate_job.py). One session:

* CE: the secure set union of the parties' training rows generalized by the release's cut (a
  part of the release the leader holds, which it checks); the leader trains C4.5 on them.
* BE: the secure set union of the raw training rows' C4.5 domains; the tree grown from secure
  sums of counts (leader/kinds/c45.py's oracle, the parties' C4.5 counting).
* UE: the same without the QIDs (its domains are BE's, restricted: no second union).
* Each tree is sent to every party, which tests it on its own test rows (CE's generalized by
  the cut) and answers (errors, rows) only into a secure sum: the leader learns the totals.

The figures equal `fedanon evaluate lkc`'s on the pooled table split the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from fedanon.configschema import (
    ConfigError,
    InputFile,
    Integer,
    Key,
    Names,
    Number,
    Table,
    Text,
)
from fedanon.errors import FedanonError
from fedanon.federation.config import Hop
from fedanon.federation.evaluate_job import (
    TRAIN_UNION_ROUND,
    EvaluateTask,
    fingerprint_items,
    restrict_items,
    task_to_proto,
    tree_to_proto,
)
from fedanon.federation.tls import TLSFiles
from fedanon.leader.federation import PartyFailure, Traffic
from fedanon.leader.kind import JobFile, LeaderKind, PhaseTimer, Progress, Report, Row
from fedanon.leader.kinds.c45 import SecureSumOracle
from fedanon.leader.ring import RingOpened, open_ring
from fedanon.leader.ring_settings import ClassificationSettings, ring_settings
from fedanon.leader.session import Session
from fedanon.leader.union import run_union
from fedanon.outputs import CommandOutputs
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.text import as_text
from fedanon.tomlconfig import resolve
from fedanon.utility.c45 import C45
from fedanon.utility.c45_counts import FeatureKinds, agree_schema, fit_from_counts
from fedanon.utility.evaluation import utility_figures
from fedanon.utility.federated_evaluation import percent

EVALUATE_SCHEMA = Table(
    {
        "release": Key(InputFile(), required=True),
        "qids": Key(Names(min_items=1)),
        "class": Key(Text()),
        "test_fraction": Key(Number(0, 1, low_open=True, high_open=True), default=0.3),
        "seed": Key(Integer(0, 2**63 - 1), default=1),
    }
)


@dataclass
class EvaluateLeaderJob(ClassificationSettings):
    """A federated BE/CE/UE run: the release (held here), its taxonomy, the split and the
    outputs (the ring settings are keyword arguments: :class:`ClassificationSettings`, whose
    sum is pairwise by default)."""

    kind: ClassVar[str] = "evaluate"

    parties: list[Hop]
    tls: TLSFiles | None
    release: pd.DataFrame
    taxonomy: TaxonomyFile
    out: Path | None
    qids: list[str] | None = None
    class_column: str | None = None
    test_fraction: float = 0.3
    seed: int = 1
    report: Path | None = None
    name: str = "leader"
    relay_listen: str | None = None  # transport = "outbound": the relay's address
    task: EvaluateTask = field(init=False)

    def __post_init__(self) -> None:
        self.task = evaluation_task(
            self.release, self.taxonomy, self.qids, self.class_column, self.test_fraction, self.seed
        )

    def check(self) -> None:
        """Refuse jobs the protocol cannot run safely (the ring rules of every ring kind)."""
        self.check_ring(self.parties, "the other's error and class counts")


def evaluation_task(
    release: pd.DataFrame,
    taxonomy: TaxonomyFile,
    qids: list[str] | None,
    class_column: str | None,
    test_fraction: float,
    seed: int,
) -> EvaluateTask:
    """The task from the release and its taxonomy, as `fedanon evaluate lkc` reads them: QIDs
    and class from the taxonomy unless given, numerical QIDs the taxonomy's numerical (or
    dynamic) ones, numerical other features those numerical in the release, features every
    release column but the class (in its order), the cut the labels each QID uses."""
    qids = list(qids or taxonomy.qids or [])
    class_column = class_column or taxonomy.class_column
    if not qids:
        raise FedanonError("no QIDs (the taxonomy names none; [evaluate] qids)")
    if class_column is None:
        raise FedanonError("no class column (the taxonomy names none; [evaluate] class)")
    missing = [c for c in (*qids, class_column) if c not in release.columns]
    if missing:
        raise FedanonError(f"the release has no column '{missing[0]}'")
    untreed = [q for q in qids if not taxonomy.has_taxonomy(q)]
    if untreed:
        raise FedanonError(f"the taxonomy has no tree for QID '{untreed[0]}'")
    numeric_qids = [
        q
        for q in qids
        if q in taxonomy.dynamic_attributes or taxonomy.taxonomies[q].kind == "numeric"
    ]
    features = [str(c) for c in release.columns if c != class_column]
    numeric_other = [
        f
        for f in features
        if f not in qids
        and pd.api.types.is_numeric_dtype(release[f])
        and not pd.api.types.is_bool_dtype(release[f])
    ]
    cut = {q: [str(v) for v in pd.unique(as_text(release[q]))] for q in qids}
    dtypes = {str(c): str(release[c].dtype) for c in release.columns}
    return EvaluateTask(
        features, qids, numeric_qids, numeric_other, class_column, cut, dtypes, test_fraction, seed
    )


class Tester:
    """Sends a tree to every party to test, then sums the (errors, rows) pairs."""

    def __init__(self, session: Session, ring: RingOpened, traffic: Traffic) -> None:
        self.session = session
        self.ring = ring
        self.traffic = traffic

    def errors(self, iteration: int, figure: str, model: C45) -> np.ndarray:
        ref = self.session.ref(iteration)
        request = pb.EvaluateClassifyRequest(ref=ref, figure=figure, tree=tree_to_proto(model))
        seconds = self.session.job.rpc_seconds
        replies = self.session.fan_out(
            f"test of {figure}", lambda n, s: s.EvaluateClassify(request, timeout=seconds)
        )
        wrong = [n for n, r in replies.items() if r.length != 2]
        if wrong:
            raise PartyFailure(f"test of {figure}: party {wrong[0]} answered no error count")
        self.traffic.add("trees", request.ByteSize() * len(replies), 0)
        return self.ring.sums.total(pb.SumRequest(ref=ref), 2, self.traffic).astype(np.int64)


def federated_figures(job: EvaluateLeaderJob, progress: Progress | None = None) -> Report:
    """Run one session; the figures (CE, BE, UE, DR, cost, benefit, rows) and the run's facts."""
    job.check()
    show = (progress or Progress()).phase
    task = job.task
    proto = task_to_proto(task)
    traffic = Traffic()
    session = Session(job)
    timer = PhaseTimer()
    totals: dict[str, np.ndarray] = {}
    with session:
        ring = open_ring(
            session, fingerprint_items(proto), pb.OpenSessionRequest(evaluate=proto), job.sum_mode
        )
        timer.since_start("handshake")
        tester = Tester(session, ring, traffic)
        with timer.phase("CE"):
            show("CE: secure set union of the generalized training rows")
            rows = run_union(session, ring.keys, traffic, job, TRAIN_UNION_ROUND, on_phase=show)
            train = _training_rows(rows, task, job.release)
            model = C45().fit(train[task.features], train[task.class_column], task.numeric("CE"))
            totals["CE"] = tester.errors(TRAIN_UNION_ROUND + 1, "CE", model)
        iteration = TRAIN_UNION_ROUND + 1
        show("BE: secure set union of the raw training domains, tree from secure sums")
        with timer.phase("domains"):
            rows = run_union(session, ring.keys, traffic, job, iteration, on_phase=show)
            try:
                items = sorted({bytes.fromhex(r[0]) for r in rows})
            except (ValueError, IndexError):
                raise FedanonError("BE: the union's items do not decode") from None
        for figure in ("BE", "UE"):
            with timer.phase(figure):
                if figure == "UE":
                    show("UE: tree without the QIDs from secure sums")
                    items = restrict_items(items, task.features, task.remaining)
                model, iteration = _grow(session, ring, traffic, task, figure, items, iteration)
                iteration += 1
                totals[figure] = tester.errors(iteration, figure, model)
        ended = session.end()
    figures = utility_figures(
        percent(totals["CE"]),
        percent(totals["BE"]),
        percent(totals["UE"]),
        job.release[task.qids],
        task.qids,
        len(train),
        int(totals["CE"][1]),
    )
    timer.since_start("total")
    return {
        **figures,
        "mode": "distributed",
        "session_id": session.session_id,
        "parties": session.ring,
        "sum_mode": job.sum_mode,
        "test_fraction": task.test_fraction,
        "seed": task.seed,
        "seconds": timer.rounded(),
        "leader_bytes": {"sent": traffic.sent, "received": traffic.received},
        "party_bytes": {
            n: {"sent": r.bytes_sent, "received": r.bytes_received} for n, r in ended.items()
        },
    }


def _training_rows(
    rows: list[list[str]], task: EvaluateTask, release: pd.DataFrame
) -> pd.DataFrame:
    """The union's rows as the release's columns; they must be rows of the release (else the
    release is not of the parties' tables, and CE would be of some other table)."""
    columns = [*task.features, task.class_column]
    if not rows:
        raise FedanonError("CE: the parties hold no training row")
    train = pd.DataFrame(rows, columns=columns, dtype=object)
    released = pd.DataFrame({c: as_text(release[c]).astype(object) for c in columns})
    extra = train.value_counts().sub(released.value_counts(), fill_value=0).clip(lower=0).sum()
    if extra:
        raise FedanonError(
            f"CE: {int(extra)} of the parties' {len(train)} generalized training rows are not "
            "in the release (is it the release of these parties' tables?)"
        )
    try:
        return train.astype({c: task.dtypes[c] for c in columns})
    except (ValueError, TypeError) as exc:
        raise FedanonError(f"CE: the training rows do not read as the release's: {exc}") from None


def _grow(
    session: Session,
    ring: RingOpened,
    traffic: Traffic,
    task: EvaluateTask,
    figure: str,
    items: list[bytes],
    start: int,
) -> tuple[C45, int]:
    """A raw tree (BE's or UE's) from secure sums of counts; the last iteration it used."""
    kinds = FeatureKinds(task.figure_features(figure), task.numeric(figure))
    try:
        schema = agree_schema(kinds, [], lambda _sets: items)
    except ValueError as exc:
        raise FedanonError(f"{figure}: the union's items do not decode: {exc}") from None
    oracle = SecureSumOracle(session, ring.sums, schema, items, traffic, start=start)
    return fit_from_counts(oracle, schema), start + oracle.rounds


def run_evaluate(job: EvaluateLeaderJob, progress: Progress | None = None) -> Report:
    """Run one session; write the figures to `out` (and the report) atomically, both or none."""
    if job.out is None:
        raise FedanonError("no output path for the figures (out = ...)")
    outputs = CommandOutputs()
    outputs.claim("out", job.out)
    outputs.claim("report", job.report)
    report = federated_figures(job, progress)
    report = {**report, "output": str(job.out)}
    with outputs.writing() as staged:
        assert job.out is not None
        staged.json(job.out, {k: report[k] for k in FIGURE_KEYS})
        if job.report is not None:
            staged.json(job.report, report)
    return report


#: What `out` holds: `fedanon evaluate lkc`'s report keys.
FIGURE_KEYS = ("CE", "BE", "UE", "DR", "cost", "benefit", "n_train", "n_test")


def load_evaluate_job(file: JobFile) -> EvaluateLeaderJob:
    """A job.toml with an [evaluate] section: the release, the split, QIDs and class."""
    from fedanon.readers.table_io import read_table
    from fedanon.taxonomy.loader import load_taxonomy

    data, section = file.data, file.data["evaluate"]
    path = resolve(file.base, section["release"])
    if not path.is_file():
        raise ConfigError(f"{file.where}: evaluate.release: {path} is not a file")
    release = read_table(path)
    taxonomy = load_taxonomy(file.required_path("taxonomy"), data_columns=list(release.columns))
    return EvaluateLeaderJob(
        parties=file.parties,
        tls=file.tls,
        release=release,
        taxonomy=taxonomy,
        out=file.required_path("out"),
        qids=section["qids"],
        class_column=section["class"],
        test_fraction=section["test_fraction"],
        seed=section["seed"],
        report=file.path("report"),
        name=data["name"],
        **ring_settings(data),
    )


def evaluate_summary(report: Report) -> list[Row]:
    """The summary table of a federated BE/CE/UE run."""
    return [
        ("parties", ", ".join(report["parties"])),
        ("sum mode", report["sum_mode"]),
        ("CE / BE / UE", f"{report['CE']:.2f}% / {report['BE']:.2f}% / {report['UE']:.2f}%"),
        ("DR", f"{report['DR']:.4f}"),
        ("rows", f"{report['n_train']} training, {report['n_test']} test"),
        ("seconds", report["seconds"]),
        ("output", report["output"]),
    ]


KIND = LeaderKind(
    section="evaluate",
    title="federated evaluation",
    schema=EVALUATE_SCHEMA,
    load=load_evaluate_job,
    run=run_evaluate,
    summary=evaluate_summary,
    required={"out": "a file path for the figures", "taxonomy": "the release's taxonomy"},
)
