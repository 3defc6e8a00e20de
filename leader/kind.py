"""What a job kind is at the leader: the mirror of the party's handlers (party/handler.py).

The leader's registry (leader/kinds/__init__.py) holds one :class:`LeaderKind` per job kind,
keyed by its ``job.toml`` section (``[lkc]``, ``[drbt]``, ``[randomize]``). Loading a job
(leader/config.py) finds the one section given and asks its kind to build the job; the CLI
(``fedanon leader run``) runs it and prints its summary through the same object. Nothing else
at the leader asks which kind it has, so a new kind is its own module plus one registration
(docs/architecture.md, "How to add a job kind").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from fedanon.configschema import ConfigError, Table
from fedanon.federation.config import Hop
from fedanon.federation.tls import TLSFiles
from fedanon.tomlconfig import resolve

Report = dict[str, Any]
#: A line of the end-of-run summary table: (label, value).
Row = tuple[str, Any]


class LeaderJob(Protocol):
    """What every kind's job has: its kind, the parties, the leader's identity and outputs.

    The session plumbing (leader/session.py) needs the parties, TLS files, name and deadline;
    the CLI the outputs, to claim them before the run.
    """

    kind: ClassVar[str]
    parties: list[Hop]
    tls: TLSFiles | None
    name: str
    rpc_seconds: float
    relay_listen: str | None  # transport = "outbound": where the leader's relay listens
    out: Path | None
    report: Path | None

    def check(self) -> None: ...


@dataclass(frozen=True)
class JobFile:
    """A validated ``job.toml`` as a kind's loader sees it: every top-level key checked (the
    kind's own section at ``data[kind.section]``), the leader's TLS files, the parties."""

    data: dict[str, Any]
    base: Path
    tls: TLSFiles | None
    where: str

    @property
    def parties(self) -> list[Hop]:
        return [Hop(p["name"], p["address"] or "") for p in self.data["parties"]]

    def path(self, key: str) -> Path | None:
        """A top-level file key (``out``, ``report``, ``taxonomy``), relative to the file."""
        path: Path | None = resolve(self.base, self.data[key])
        return path

    def required_path(self, key: str) -> Path:
        """A file key the kind requires (:attr:`LeaderKind.required`, checked before loading)."""
        path = self.path(key)
        if path is None:
            raise ConfigError(f"{self.where}: missing key '{key}' (a file path)")
        return path


@dataclass(frozen=True)
class Progress:
    """Where a run reports: `phase` hears a line at the start and end of every phase, `step` a
    line per step of the kind's loop (LKC: every specialization). Both may ignore the text."""

    phase: Callable[[str], None] = field(default=lambda _text: None)
    step: Callable[[str], None] = field(default=lambda _text: None)


@dataclass(frozen=True)
class LeaderKind:
    """One job kind at the leader: its section of ``job.toml``, how to build and run its job,
    and how its report reads in the CLI's summary.

    `section` is also the ``OpenSessionRequest`` job field the kind's leader module sends (the
    key of its party handler) unless the module says otherwise. `required` names top-level
    keys the kind needs, each with the reason the error gives. `steward_report`: the CLI's
    ``--html`` release report describes this kind's release (LKC).
    """

    section: str
    title: str  # "distributed LKC": the progress display's and (after "fedanon ") the summary's
    schema: Table
    load: Callable[[JobFile], Any]
    run: Callable[[Any, Progress], Report]
    summary: Callable[[Report], list[Row]]
    required: Mapping[str, str] = field(default_factory=dict)
    steward_report: bool = False


class PhaseTimer:
    """The seconds of every phase of one run, for the report's ``seconds``: one clock for every
    kind instead of a ``perf_counter`` pair around each phase.

    ``with timer.phase("union"):`` times one phase (also on the way out of a failure, which
    the report never shows); :meth:`total` is the time since the timer was made.
    """

    def __init__(self) -> None:
        self.began = time.perf_counter()
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        mark = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = time.perf_counter() - mark

    def since_start(self, name: str) -> None:
        """Record `name` as the time from the timer's start until now (the handshake of a
        kind whose first phase began with the timer; ``total`` at the end)."""
        self.seconds[name] = time.perf_counter() - self.began

    def rounded(self) -> dict[str, float]:
        """The report's ``seconds``: every phase in the order timed, to 0.1 ms."""
        return {k: round(v, 4) for k, v in self.seconds.items()}
