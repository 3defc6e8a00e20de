"""The LKC job at the leader: its ``[lkc]`` section, its job, and one distributed session from
handshake to written release.

Order of a session: handshake (fingerprints compared item by item, columns agreed), key sharing
for the union, the specialization loop (one secure sum per iteration), the secure set union
of the generalized records, End. Any failure aborts the session at every reachable party, names
the party and phase, and leaves no output file. From the handshake on, a heartbeat renews the
session's lease at every party, so that however long the leader computes between messages no
other leader can take the parties over; if this leader dies, the leases lapse and the parties
accept the next job. The session plumbing (handshake, lease, keys, sum protocol, abort, End) is
leader/session.py's, shared with the other job kinds; this module is the LKC job's own steps.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from fedanon.algorithms.tds.api import PRESETS, build_report, resolve_params
from fedanon.algorithms.tds.engine import LKCEngine, LKCResult, StepInfo
from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.algorithms.tds.layout import StatsLayout
from fedanon.algorithms.tds.prefix import Prefix, choose_prefix
from fedanon.algorithms.tds.scores import SCORES
from fedanon.algorithms.tds.suppression import parse_suppression_share
from fedanon.configschema import ConfigError, Integer, Key, Names, Proportion, Table, TableOf, Text
from fedanon.errors import FedanonError
from fedanon.federation.config import Hop
from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.federation.tls import TLSFiles
from fedanon.leader.exclusion import Attempt, run_excluding
from fedanon.leader.federation import FederationSource, Resender, Traffic
from fedanon.leader.kind import JobFile, LeaderKind, PhaseTimer, Progress, Report, Row
from fedanon.leader.rejoin import DEFAULT_REJOIN_SECONDS
from fedanon.leader.ring import RingOpened, open_ring, rerun_ring
from fedanon.leader.ring_settings import RingSettings, ring_settings
from fedanon.leader.session import Session
from fedanon.leader.union import UnionProgress, run_union
from fedanon.models.lkc import check_lkc
from fedanon.outputs import CommandOutputs
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.readers.table_io import PARQUET_SUFFIXES
from fedanon.report.summary import seconds_text, summary_rows
from fedanon.schema import Schema
from fedanon.tables import arrow_of, strings_of
from fedanon.taxonomy.files import SensitiveValue, TaxonomyFile
from fedanon.taxonomy.loader import load_taxonomy


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


@dataclass
class LKCLeaderJob(RingSettings):
    """Everything the leader needs for one distributed LKC run (the ring settings are
    keyword arguments: :class:`RingSettings`)."""

    kind: ClassVar[str] = "lkc"

    name: str
    taxonomy: TaxonomyFile
    spec: LKCJobSpec
    parties: list[Hop]
    tls: TLSFiles | None
    out: Path
    report: Path | None = None
    extra_report: dict[str, Any] = field(default_factory=dict)
    relay_listen: str | None = None  # transport = "outbound": the relay's address
    # [timeouts] rejoin_seconds: how long a party that went away mid-job is waited for before
    # the job fails (0: not at all; leader/rejoin.py). Rejoin is the default recovery.
    rejoin_seconds: float = DEFAULT_REJOIN_SECONDS

    def check(self) -> None:
        """Refuse jobs the protocol cannot run safely."""
        self.check_ring(self.parties, "the other's counts from the global sums")


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


def load_lkc_job(file: JobFile) -> LKCLeaderJob:
    """A job.toml with an [lkc] section: the taxonomy's defaults completed by the section."""
    data = file.data
    taxonomy = load_taxonomy(file.required_path("taxonomy"))
    lkc = {k: v for k, v in data["lkc"].items() if v is not None}
    return LKCLeaderJob(
        name=data["name"],
        taxonomy=taxonomy,
        spec=spec_from_table(lkc, taxonomy, "lkc"),
        parties=file.parties,
        tls=file.tls,
        out=file.required_path("out"),
        report=file.path("report"),
        rejoin_seconds=data["timeouts"]["rejoin_seconds"],
        **ring_settings(data),
    )


def run_lkc(
    job: LKCLeaderJob,
    on_step: Callable[[StepInfo], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the job's session (again without parties that dropped out for good, where every
    party allows it: leader/exclusion.py); write the release and report; return the report.

    `on_step` hears every specialization; `on_phase` a line at the start and end of every
    phase (handshake, specialization, each phase of the union, check and write).
    """
    show = on_phase or (lambda _text: None)
    job.check()
    outputs = CommandOutputs()
    outputs.claim("out", job.out)
    outputs.claim("report", job.report)
    spec = job.spec
    schema = spec.schema(job.taxonomy)
    timer = PhaseTimer()

    session = Session(job)  # every attempt's: a rerun is the session's next attempt
    names = ", ".join(f"{hop.name} ({hop.address or 'via the relay'})" for hop in job.parties)
    show(f"handshake: connecting to {len(job.parties)} parties: {names}")
    with session:
        ring = open_ring(
            session,
            spec.fingerprint_items(schema),
            pb.OpenSessionRequest(lkc=lkc_job_to_proto(spec)),
            job.sum_mode,
            prepare_union=job.union_mode == "layered",
            pad_to=job.union_pad_to,
            rejoin_seconds=job.rejoin_seconds,
        )
        first = Attempt(list(job.parties))
        notice = first.opened(ring.replies, job)
        if notice is not None:
            show(notice)
        timer.since_start("handshake")
        show(f"handshake: done; {len(session.ring)} parties agreed on the job and the keys")

        def attempt(current: Attempt) -> _Attempted:
            return _attempt(job, current, session, ring, schema, timer, show, on_step, on_phase)

        done, last = run_excluding(first, job, attempt, show)
        ended = session.end()
    result, traffic = done.result, done.traffic

    with timer.phase("check"):
        show("check: LKC-privacy of the integrated release")
        release = _release_table(done.rows, done.ring.columns, job.out)
        sensitive: dict[str, list[str]] = defaultdict(list)
        for s in spec.sensitive:
            sensitive[s.column].append(s.value)
        roots = {t.attribute: t.labels[t.root] for t in schema.taxonomies}
        check = check_lkc(
            release,
            spec.qids,
            dict(sensitive),
            spec.params.L,
            spec.params.K,
            spec.params.C,
            suppressed=roots if spec.suppress else None,
            max_suppressed=result.suppression_budget,
        )
    if not check.ok:
        raise FedanonError(
            f"the integrated release fails LKC-privacy ({check.worst}); nothing written"
        )
    with outputs.writing() as staged:
        with timer.phase("write"):
            staged.table(job.out, release)
        show("write: the release" + (" and the report" if job.report else ""))
        timer.since_start("total")

        report = build_report(
            schema, spec.params, spec.score, result, spec.suppress, spec.suppressed_mode
        )
        report.update(
            {
                "mode": "distributed",
                "session_id": session.session_id,
                "parties": session.ring,
                "sum_mode": job.sum_mode,
                "union_mode": job.union_mode,
                "iterations": done.iterations,
                "seconds": timer.rounded(),
                "union_seconds": done.union_seconds,
                "leader_bytes": {"sent": traffic.sent, "received": traffic.received},
                "party_bytes": {
                    n: {"sent": r.bytes_sent, "received": r.bytes_received}
                    for n, r in ended.items()
                },
                "privacy_check": check.to_dict(),
                "party_records": done.revealed or None,
                **(
                    {
                        "excluded": last.excluded,
                        "attempts": last.number,
                        "resumed_from": 0 if last.resumed is None else last.resumed[0],
                    }
                    if last.excluded
                    else {}
                ),
                **rejoined_report(done.ring.rejoin),
                "output": str(job.out),
                **job.extra_report,
            }
        )
        if job.report is not None:
            staged.json(job.report, report)
    return report


def _release_table(rows: list[list[str]], columns: list[str], out: Path) -> Any:
    """The integrated records as the table the checker reads and the writer writes: Arrow
    text columns (a CSV or TSV from them is byte for byte the one a DataFrame gives, and
    pandas, whose import costs about as much CPU as a whole centralized run on Adult, is
    not loaded); a DataFrame for Parquet, whose file records the pandas types it came from."""
    if out.suffix.lower() in PARQUET_SUFFIXES:
        import pandas as pd

        return pd.DataFrame(rows, columns=columns)
    # A generalized release repeats few distinct records: each column's text is built once
    # per distinct record and gathered by the rows' record numbers.
    distinct: dict[tuple[str, ...], int] = {}
    numbers = np.fromiter(
        (distinct.setdefault(tuple(row), len(distinct)) for row in rows), np.int64, len(rows)
    )
    wrong = next((record for record in distinct if len(record) != len(columns)), None)
    if wrong is not None:  # a DataFrame refused such a row too; here in one line
        raise FedanonError(
            f"union: a released record has {len(wrong)} values, not the {len(columns)} "
            "agreed columns"
        )
    cells = list(zip(*distinct, strict=True)) if distinct else [()] * len(columns)
    order = arrow_of(numbers)
    arrays = [strings_of(column).take(order) for column in cells]
    return pa.Table.from_arrays(arrays, names=list(columns))


@dataclass
class _Attempted:
    """What the attempt that finished the job produced (leader/exclusion.py's attempt)."""

    ring: RingOpened
    result: LKCResult
    rows: list[list[str]]
    iterations: int
    traffic: Traffic
    union_seconds: dict[str, float]
    revealed: dict[str, int]  # party record counts, only when the union reveals them


def _attempt(
    job: LKCLeaderJob,
    current: Attempt,
    session: Session,
    opened: RingOpened,
    schema: Schema,
    timer: PhaseTimer,
    show: Callable[[str], None],
    on_step: Callable[[StepInfo], None] | None,
    on_phase: Callable[[str], None] | None,
) -> _Attempted:
    """One attempt of the open `session` with `current`'s parties, from its first secure sum
    to the union (a rerun's first moves the session to it: its ``Rerun``)."""
    spec = job.spec
    revealed: dict[str, int] = {}
    traffic = Traffic()
    with current.watching(session, job.rpc_seconds):
        ring = opened
        if current.number > 1:
            current.switch(session)
            ring = rerun_ring(session, opened, job.sum_mode, job.rejoin_seconds)
            show(f"rerun: {len(session.ring)} parties moved to attempt {current.number}")
        show("specialize: secure sums of the statistics, one per iteration")

        with timer.phase("specialize"):
            source = FederationSource(
                session.session_id,
                StatsLayout.for_schema(schema),
                ring.sums,
                traffic,
                schema=schema,
                attempt=session.attempt,
            )
            engine = LKCEngine(
                schema, spec.params, score=spec.score, on_step=on_step, suppress=spec.suppress
            )
            try:
                result = engine.run(source, _resume_point(current, source, spec, schema, show))
            finally:
                # Once the sum that set the start state completed (the root's, or a resumed
                # rerun's adoption), this attempt's own history is what a rerun resumes from.
                if source.iteration >= (1 if current.resumed is None else 2):
                    done = len(source.completed)
                    current.completed = Prefix(
                        list(source.completed), engine.history, engine.dropped
                    ).first(done)
        show(f"specialize: done; {source.iteration} iterations")

        union_seconds: dict[str, float] = {}
        progress = UnionProgress()  # what a resumed union keeps (leader/rejoin.py)
        with timer.phase("union"):
            rows = ring.rejoin.union(
                lambda round_: run_union(
                    session,
                    ring.keys,
                    traffic,
                    job,
                    round_,
                    result.suppressed_partitions.tolist(),
                    on_phase,
                    on_counts=revealed.update,
                    seconds=union_seconds,
                    progress=progress,
                ),
                source.iteration,
                resumable=job.union_mode == "layered",
            )
        current.united()
        show(f"union: done; {len(rows):,} records")
    return _Attempted(ring, result, rows, source.iteration, traffic, union_seconds, revealed)


def _resume_point(
    current: Attempt,
    source: FederationSource,
    spec: LKCJobSpec,
    schema: Schema,
    show: Callable[[str], None],
) -> Prefix | None:
    """Where a rerun starts: with the specializations an earlier attempt completed, the
    survivors' own counts at their last cut (one sum: the probe) choose the longest prefix
    valid for them (prefix.py), which the engine's first sum adopts; None (the root) for a
    first attempt or one with nothing to resume."""
    steps = current.inherited.steps
    if not current.excluded or not steps:
        return None
    own = source.probe(steps)
    prefix = choose_prefix(schema, spec.params, spec.suppress, current.inherited, own)
    current.resumed = (len(prefix.steps), len(steps))
    show(
        f"exclusion: resuming at iteration {len(prefix.steps)} of the {len(steps)} completed "
        "(the longest prefix whose cut is valid for the survivors)"
    )
    return prefix


def rejoined_report(rejoin: Resender) -> dict[str, Any]:
    """The report's ``rejoined``: each party that rejoined and at which iteration (absent
    when none did, so a fault-free run's report is unchanged)."""
    if not rejoin.rejoined:
        return {}
    return {"rejoined": [{"party": name, "iteration": it} for name, it in rejoin.rejoined]}


def step_text(step: StepInfo) -> str:
    """One specialization as the progress display shows it."""
    return (
        f"iteration {step.iteration}: Best {step.attribute}={step.value} "
        f"(score {step.score:.4g}), min group {step.min_group_size}, "
        f"{step.partitions} groups"
    )


def lkc_summary(report: Report) -> list[Row]:
    """The summary table of a distributed LKC run (with the steward report's headline when
    the CLI added it as ``release_report``)."""
    groups = report["groups"]
    steward = report.get("release_report")
    return [
        ("parties", ", ".join(report["parties"])),
        ("records", report["records"]),
        ("iterations", report["iterations"]),
        ("min group size (L-subsets)", groups["min_group_size"]),
        *(summary_rows(steward) if steward is not None else []),
        *(
            [("suppressed records", f"{report['suppression']['suppressed_records']:,}")]
            if "suppression" in report
            else []
        ),
        ("time", seconds_text(report["seconds"])),
        ("output", report["output"]),
    ]


def _run(job: LKCLeaderJob, progress: Progress) -> Report:
    return run_lkc(
        job, on_step=lambda step: progress.step(step_text(step)), on_phase=progress.phase
    )


KIND = LeaderKind(
    section="lkc",
    title="distributed LKC",
    schema=LKC_SCHEMA,
    load=load_lkc_job,
    run=_run,
    summary=lkc_summary,
    required={"taxonomy": "an LKC job needs a file path", "out": "a file path"},
    steward_report=True,
)
