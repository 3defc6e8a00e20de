"""Shared helpers and fixtures of the distributed-mode integration tests.

The main correctness claim of the distributed mode (docs/distributed.md) is that its release
equals, as a multiset of rows, the centralized release on the union of the parties' tables, with
the same final cut. Every test here therefore runs both and compares; the helpers keep that
comparison identical everywhere so a weaker check cannot creep into one test.

Daemon start-up (three Python processes importing pandas, gRPC and cryptography) dominates the
cost of these tests, so one synthetic federation is shared by the whole session
(:func:`hospital_federation`). Tests that kill or freeze one of its daemons restart it before
they return, whatever the outcome; tests that need other data or configurations start their own.
"""

from __future__ import annotations

import functools
import os
import signal
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema
from fedanon.algorithms.tds.engine import StepInfo
from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.federation.config import Hop
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_channel
from fedanon.leader.kinds.lkc import LKCLeaderJob, run_lkc, spec_from_table
from fedanon.leader.sim import Federation, federation, split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from fedanon.readers.datadir import data_dir
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.loader import load_taxonomy
from tests.harness.wait import wait_until, wait_while

ADULT_CSV = data_dir() / "adult" / "adult_all.csv"
ADULT_TAXONOMY = data_dir() / "adult" / "lkc_paper_taxonomy.hchy"
requires_adult = pytest.mark.skipif(
    not (ADULT_CSV.exists() and ADULT_TAXONOMY.exists()),
    reason=f"shared Adult data not found under {data_dir()}",
)

HOSPITAL_DROP = ["patient_id"]
# The synthetic hospital table's quasi-identifiers (its taxonomy covers each).
HOSPITAL_QIDS = [
    "age",
    "sex",
    "postcode",
    "country_of_birth",
    "marital_status",
    "employment",
    "admission_type",
    "length_of_stay",
]
# The shared federation's session lease: short, so that tests of a dead leader or a hung party
# see the lease lapse within seconds (the default is 30 s).
LEASE_SECONDS = 5.0


@dataclass(frozen=True)
class Dataset:
    """A whole table (the union of the parties' tables) and its taxonomy file."""

    table: pd.DataFrame
    taxonomy_path: Path
    taxonomy: TaxonomyFile
    drop: tuple[str, ...] = ()

    def head(self, rows: int) -> Dataset:
        """The first `rows` records, same taxonomy (a quicker federation for one test)."""
        table = self.table.iloc[:rows].reset_index(drop=True)
        return Dataset(table, self.taxonomy_path, self.taxonomy, self.drop)

    def spec(self, L: int | None, K: int, C: str | None, **lkc: Any) -> LKCJobSpec:
        """The job as the leader builds it (``spec_from_table``, like ``fedanon sim lkc``)."""
        section = {"L": L, "K": K, "C": C, "drop": list(self.drop), **lkc}
        return spec_from_table(section, self.taxonomy, "test job").with_class_values_of(self.table)


def load_dataset(table: pd.DataFrame, taxonomy_path: Path, drop: tuple[str, ...] = ()) -> Dataset:
    taxonomy = load_taxonomy(taxonomy_path, data_columns=list(table.columns))
    return Dataset(table, Path(taxonomy_path), taxonomy, drop)


def hospital_dataset(n_rows: int, seed: int) -> Dataset:
    """The package's synthetic hospital table (no shared data needed)."""
    return load_dataset(
        generate_hospital(n_rows, seed), hospital_taxonomy_path(), tuple(HOSPITAL_DROP)
    )


@functools.cache
def adult_dataset() -> Dataset:
    """Adult in the paper setting: the .hchy's 13 QIDs, sensitive section and class."""
    table = pd.read_csv(ADULT_CSV, dtype=str, keep_default_na=False)
    return load_dataset(table, ADULT_TAXONOMY)


@dataclass(frozen=True)
class Centralized:
    table: pd.DataFrame
    report: dict[str, Any]


def centralized(dataset: Dataset, spec: LKCJobSpec) -> Centralized:
    """The reference: the centralized engine on the whole table with the job's parameters."""
    schema = build_schema(
        dataset.taxonomy, dataset.table, spec.qids, spec.sensitive, spec.class_column
    )
    release = anonymize_lkc(
        dataset.table,
        schema,
        spec.params,
        spec.score,
        spec.drop,
        suppress=spec.suppress,
        suppressed_mode=spec.suppressed_mode,
        search="greedy",  # what a federation runs (best-of needs a second pass)
    )
    return Centralized(release.table, release.report)


def make_job(
    hops: list[Hop],
    tls: TLSFiles | None,
    dataset: Dataset,
    spec: LKCJobSpec,
    out: Path,
    **options: Any,
) -> LKCLeaderJob:
    # The fault tests here assert that a party gone for good fails the job at once; the rejoin
    # tests pass their own bound (the production default waits DEFAULT_REJOIN_SECONDS).
    options.setdefault("rejoin_seconds", 0.0)
    return LKCLeaderJob(
        name="leader",
        taxonomy=dataset.taxonomy,
        spec=spec,
        parties=hops,
        tls=tls,
        out=out,
        **options,
    )


def run_distributed(
    hops: list[Hop],
    tls: TLSFiles | None,
    dataset: Dataset,
    spec: LKCJobSpec,
    out: Path,
    on_step: Any = None,
    **options: Any,
) -> dict[str, Any]:
    return run_lkc(make_job(hops, tls, dataset, spec, out, **options), on_step=on_step)


def read_release(path: Path) -> pd.DataFrame:
    """A release as the checker reads it: every cell a plain string."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def rows(table: pd.DataFrame) -> Counter[tuple[str, ...]]:
    """The table as a multiset of rows of strings."""
    return Counter(map(tuple, table.astype(str).itertuples(index=False, name=None)))


def assert_same_release(out: Path, report: dict[str, Any], reference: Centralized) -> None:
    """The distributed release equals the centralized one: columns, rows (multiset), cut."""
    released = read_release(out)
    assert list(released.columns) == list(reference.table.columns)
    ours, theirs = rows(released), rows(reference.table)
    if ours != theirs:
        extra = list((ours - theirs).items())[:3]
        missing = list((theirs - ours).items())[:3]
        pytest.fail(
            f"distributed release differs from the centralized one: "
            f"{sum((ours - theirs).values())} extra rows (e.g. {extra}), "
            f"{sum((theirs - ours).values())} missing rows (e.g. {missing})"
        )
    assert report["final_cut"] == reference.report["final_cut"]
    assert report["specialization_sequence"] == reference.report["specialization_sequence"]
    suppression = report.get("suppression", {})
    dropped = suppression["suppressed_records"] if suppression.get("mode") == "drop" else 0
    assert report["records"] == len(reference.table) + dropped


def run_matches_centralized(
    fed: Federation, dataset: Dataset, spec: LKCJobSpec, out: Path, **options: Any
) -> dict[str, Any]:
    """Run the job on `fed`'s daemons and assert that the release equals the centralized one.

    Returns the leader's report for whatever else a test checks.
    """
    report = run_distributed(fed.hops, fed.leader_tls, dataset, spec, out, **options)
    assert_same_release(out, report, centralized(dataset, spec))
    return report


def status(fed: Federation, index: int) -> pb.StatusReply:
    """A daemon's Status, asked with the leader's certificate."""
    daemon = fed.daemons[index]
    channel = make_channel(daemon.address, daemon.name, fed.leader_tls)
    try:
        return pb_grpc.PartyStub(channel).Status(pb.StatusRequest(), timeout=5)
    finally:
        channel.close()


def steady_status(fed: Federation, index: int) -> pb.StatusReply:
    """A daemon's Status without the lease left, which runs down by itself: what a test
    compares before and after a message that must change nothing."""
    reply = status(fed, index)
    reply.ClearField("lease_left_seconds")
    return reply


def running_leases(fed: Federation, indices: list[int] | None = None) -> dict[str, float]:
    """The daemons (of `indices`, default all) whose open session's lease still runs, with the
    seconds it has left (``StatusReply.lease_left_seconds``): while one runs, that party
    refuses a new job as busy."""
    which = range(len(fed.daemons)) if indices is None else indices
    left = {fed.daemons[i].name: status(fed, i).lease_left_seconds for i in which}
    return {name: seconds for name, seconds in left.items() if seconds > 0}


def wait_leases_lapsed(fed: Federation, indices: list[int] | None = None) -> dict[str, float]:
    """Wait (bounded) until no daemon of `indices` holds a session whose lease runs: a session
    its leader gave up on (dead, stopped, or an abort the party missed) no longer blocks the
    next job. What still runs after the bound, for the caller's ``assert not ...``."""
    return wait_while(lambda: running_leases(fed, indices), interval=0.2)


def party_processes(marker: str) -> list[int]:
    """Pids of live ``party serve`` processes whose command line mentions `marker`.

    psutil is not a dependency, so this reads /proc; `marker` (a test's private work
    directory) keeps other engineers' daemons on the same machine out of the answer.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if "party serve" in cmdline and marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_gone(marker: str) -> list[int]:
    """The ``party serve`` processes under `marker` still alive once they had time to end:
    daemons die with their parent (PR_SET_PDEATHSIG) or stop with the sim, but not in the same
    instant, and on a loaded machine a dying process can take seconds to be scheduled."""
    return wait_while(lambda: party_processes(marker))


class SignalAtIteration:
    """An ``on_step`` callback that sends `sig` to daemon #`victim` after `iteration`.

    The callback runs in the leader's thread right after the iteration's secure sum, so the
    next sum is the first message that meets the dead (or frozen) party: deterministic, no
    sleeps, no race with the leader.
    """

    def __init__(self, fed: Federation, victim: int, iteration: int, sig: int) -> None:
        self.fed, self.victim, self.iteration, self.sig = fed, victim, iteration, sig
        self.fired: list[int] = []

    def __call__(self, step: StepInfo) -> None:
        if step.iteration < self.iteration or self.fired:
            return
        self.fired.append(step.iteration)
        daemon = self.fed.daemons[self.victim]
        if self.sig == signal.SIGKILL:
            self.fed.stop(daemon, signal.SIGKILL)  # waits until the process is gone
        else:
            assert daemon.process is not None
            os.kill(daemon.process.pid, self.sig)
            if self.sig == signal.SIGSTOP:
                wait_until_stopped(daemon.process.pid)


def wait_until_stopped(pid: int) -> None:
    """Return once every thread of `pid` is stopped: kill() only queues SIGSTOP, and a thread
    that is running at that moment could still answer the leader's next message (under load
    the frozen party once answered one more iteration)."""
    tasks = Path(f"/proc/{pid}/task")

    def stopped() -> bool:
        states = [_state(task / "stat") for task in tasks.iterdir()]
        return all(state in ("T", "t", None) for state in states)

    assert wait_until(stopped, interval=0.005), f"process {pid} did not stop"


def _state(stat: Path) -> str | None:
    """The state letter of one /proc stat line (None when the thread has just exited)."""
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def kill_when(
    fed: Federation, victim: int, iteration: int, sig: int = signal.SIGKILL
) -> SignalAtIteration:
    return SignalAtIteration(fed, victim, iteration, sig)


# ----------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def hospital_data() -> Dataset:
    """2400 synthetic admissions: big enough for a dozen iterations, quick to unite."""
    return hospital_dataset(2400, seed=5)


@pytest.fixture(scope="session")
def hospital_federation(hospital_data: Dataset) -> Iterator[Federation]:
    """Three real daemons (mutual TLS) over a random split of `hospital_data`.

    Shared by every test that leaves the daemons as it found them (sessions end or abort, a
    killed daemon is restarted in the test's ``finally``).
    """
    parts = split_table(hospital_data.table, 3, "random", seed=1)
    with federation(
        parts, hospital_data.taxonomy_path, secure=True, lease_seconds=LEASE_SECONDS
    ) as fed:
        yield fed
