"""A job kind is its own module plus one registration per side (docs/architecture.md, "How to
add a job kind").

The toy kind ``count`` below is defined here and nowhere else: a party handler (its session,
its policy reader, its opening and one step) and a leader kind (its job.toml section, loader,
runner and summary). It reuses the DRBT job message and the ``Ids`` RPC on the wire (a new kind
in the product adds its own message to the .proto). Registered with one line on each side, it
runs from a job.toml through ``fedanon leader run`` and real party daemons (production
``build_server``, mutual TLS, loopback, in this process so that they see the registration);
unregistered, the same job.toml is refused.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import grpc
import pandas as pd
import pytest

from fedanon.atomic import write_json_atomic
from fedanon.cli.main import main
from fedanon.configschema import ConfigError, Key, Table, Text
from fedanon.errors import FedanonError
from fedanon.federation.config import Hop
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_channel
from fedanon.leader.config import load_job
from fedanon.leader.kind import JobFile, LeaderKind, PhaseTimer, Progress, Report, Row
from fedanon.leader.kinds import LEADER_KINDS
from fedanon.leader.session import Session
from fedanon.party.handler import JobHandler, Opened
from fedanon.party.handlers import HANDLERS
from fedanon.party.policy import JOB_KINDS, JobRequest
from fedanon.party.session_base import SessionBase
from fedanon.party.shell import PartyShell
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.harness.inprocess import inprocess_parties
from tests.harness.wire import UnaryServerRecorder

#: The OpenSessionRequest job field the toy rides on (a real kind has its own).
FIELD = "drbt"


# ------------------------------------------------------------------ the party's half of "count"
class CountSession(SessionBase):
    """The toy's session: how many records this party holds."""

    kind = FIELD

    def __init__(self, session_id: str, records: int) -> None:
        super().__init__(session_id)
        self.records = records


def count_admission(request: pb.OpenSessionRequest, columns: Sequence[str]) -> JobRequest:
    """The toy releases no column, only a count."""
    return JobRequest("count", {"column": request.drbt.id_column}, released=(), raw=())


def open_count(shell: PartyShell, request: pb.OpenSessionRequest) -> Opened:
    column = request.drbt.id_column
    if column not in shell.table.columns:
        raise FedanonError(f"the table has no column '{column}'")
    session = CountSession(request.ref.session_id, len(shell.table))
    return Opened(session, [f"count:column={column}"], pb.OpenSessionReply())


def count_step(
    shell: PartyShell, session: CountSession, request: pb.IdsRequest, context: grpc.ServicerContext
) -> pb.IdsReply:
    return pb.IdsReply(missing=session.records)


COUNT_HANDLER = JobHandler(FIELD, CountSession, count_admission, open_count, {"Ids": count_step})


# ----------------------------------------------------------------- the leader's half of "count"
@dataclass
class CountJob:
    kind: ClassVar[str] = "count"

    parties: list[Hop]
    tls: TLSFiles | None
    column: str
    out: Path
    report: Path | None = None
    name: str = "leader"
    rpc_seconds: float = 30.0
    relay_listen: str | None = None

    def check(self) -> None:
        if not self.parties:
            raise FedanonError("a count needs a party")


def load_count(file: JobFile) -> CountJob:
    return CountJob(file.parties, file.tls, file.data["count"]["column"], file.required_path("out"))


def run_count(job: CountJob, progress: Progress) -> Report:
    job.check()
    timer = PhaseTimer()
    items = [f"count:column={job.column}"]
    with Session(job) as session:
        session.handshake(items, pb.OpenSessionRequest(drbt=pb.DRBTJob(id_column=job.column)))
        with timer.phase("count"):
            progress.phase("count: asking every party")
            replies = session.fan_out(
                "count",
                lambda n, s: s.Ids(
                    pb.IdsRequest(ref=session.ref(), send_yours=True), timeout=job.rpc_seconds
                ),
            )
        session.end()
    counts = {name: int(replies[name].missing) for name in session.ring}
    report = {
        "parties": session.ring,
        "counts": counts,
        "records": sum(counts.values()),
        "seconds": timer.rounded(),
        "output": str(job.out),
    }
    write_json_atomic(job.out, report)
    return report


def count_summary(report: Report) -> list[Row]:
    return [("parties", ", ".join(report["parties"])), ("records", report["records"])]


COUNT_KIND = LeaderKind(
    section="count",
    title="distributed count",
    schema=Table({"column": Key(Text(), required=True)}),
    load=load_count,
    run=run_count,
    summary=count_summary,
    required={"out": "a file path"},
)


# ----------------------------------------------------------------------------------- the tests
def test_the_leader_and_the_party_register_the_same_kinds() -> None:
    """Each leader kind drives the party handler of its name; the policy knows every kind."""
    assert list(LEADER_KINDS) == list(HANDLERS) == list(JOB_KINDS)
    for section, kind in LEADER_KINDS.items():
        assert kind.section == section == HANDLERS[section].kind
        assert HANDLERS[section].session_type.kind == section


class _PassThrough(UnaryServerRecorder):
    def around(
        self,
        method: str,
        request: Any,
        context: grpc.ServicerContext,
        inner: Callable[[Any, grpc.ServicerContext], Any],
    ) -> Any:
        return inner(request, context)


@contextlib.contextmanager
def _parties(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: list[pd.DataFrame]
) -> Iterator[Any]:
    with inprocess_parties(
        parts,
        tmp_path / "fed",
        monkeypatch,
        ca_name="job kinds test CA",
        server_interceptor=lambda _name: _PassThrough(),
        hop_channel_factory=lambda _name: make_channel,
    ) as fed:
        yield fed


def _job_toml(path: Path, fed: Any, out: Path) -> Path:
    tls = fed.leader_tls
    lines = [
        f'out = "{out}"',
        "[count]",
        'column = "patient"',
        *(
            line
            for hop in fed.hops
            for line in ("[[parties]]", f'name = "{hop.name}"', f'address = "{hop.address}"')
        ),
        "[tls]",
        f'ca = "{tls.ca}"',
        f'cert = "{tls.cert}"',
        f'key = "{tls.key}"',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_kind_registered_once_per_side_runs_through_the_cli_and_real_daemons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    parts = [
        pd.DataFrame({"patient": [f"p{i}" for i in range(n)], "age": ["30"] * n}) for n in (3, 5)
    ]
    with _parties(tmp_path, monkeypatch, parts) as fed:
        config = _job_toml(tmp_path / "job.toml", fed, tmp_path / "count.json")
        with pytest.raises(ConfigError, match=r"count"):  # not registered: not a job.toml key
            load_job(config)

        monkeypatch.setitem(HANDLERS, FIELD, COUNT_HANDLER)  # the party's one registration
        monkeypatch.setitem(LEADER_KINDS, "count", COUNT_KIND)  # the leader's one registration
        capsys.readouterr()
        assert main(["leader", "run", "--config", str(config), "--json"]) == 0

    printed = json.loads(capsys.readouterr().out)
    written = json.loads((tmp_path / "count.json").read_text(encoding="utf-8"))
    assert printed == written
    assert written["counts"] == {"hospital-1": 3, "hospital-2": 5}
    assert written["records"] == 8 and list(written["seconds"]) == ["count"]


def test_a_registered_kinds_summary_is_printed_under_its_title(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    parts = [pd.DataFrame({"patient": ["a", "b"]}), pd.DataFrame({"patient": ["c"]})]
    monkeypatch.setitem(HANDLERS, FIELD, COUNT_HANDLER)
    monkeypatch.setitem(LEADER_KINDS, "count", COUNT_KIND)
    with _parties(tmp_path, monkeypatch, parts) as fed:
        config = _job_toml(tmp_path / "job.toml", fed, tmp_path / "count.json")
        capsys.readouterr()
        assert main(["leader", "run", "--config", str(config)]) == 0
    text = capsys.readouterr().out
    assert "fedanon distributed count" in text
    assert "hospital-1, hospital-2" in text and "3" in text.split("records", 1)[1]


def test_the_architecture_docs_daemon_section_names_files_that_exist() -> None:
    """docs/architecture.md's picture of the daemons and its "How to add a job kind" list name
    the modules that hold each part (the new kind's own ``foo`` files aside)."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text("utf-8")
    section = doc[doc.index("## The daemons") : doc.index("## Module mapping of issue #23")]
    named = set(re.findall(r"\b((?:party|leader|federation|protos)/[\w/]*\.(?:py|proto))", section))
    paths = {p for p in named if "foo" not in p}
    root = Path(__file__).resolve().parents[1]
    assert len(paths) >= 15 and not [p for p in sorted(paths) if not (root / p).is_file()]
    bare = set(re.findall(r"`(\w+\.py)`", section)) - {"foo.py", "foo_session.py"}
    daemons = {p.name for d in ("party", "leader", "federation") for p in (root / d).rglob("*.py")}
    assert bare and bare <= daemons, bare - daemons
