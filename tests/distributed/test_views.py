"""View tests: what each role can compute over a whole job does not depend on the other
parties' data beyond the outputs (docs/leakage.md, 'View tests').

For each message flow (ring sum, pairwise sum, union COLLECT/STRIP) the same job runs three
times on in-process daemons with wire recorders (:mod:`tests.harness.wire`):

* A and A2 on the same partition, so the quantities equal in both are the mask-free ones
  (:func:`tests.distributed.views.mask_free`);
* for each observing party, a run B on a partition where the two *other* parties traded 120
  records each way: every party keeps its record count, the union (hence every global sum,
  instruction and the release) is unchanged, but the traders' statistics differ (the leader
  is judged on the run where parties 1 and 3 traded).

For every role, every mask-free quantity of A must be the same in its run B. The ring's masked total
travelling back through the ring fails this: party i computes the returned total minus what it
forwarded, which is the sum of the later parties' vectors (the second-to-last party gets the last
party's exact vector).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedanon.leader.sim import LEADER_NAME, split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.distributed.conftest import (
    Dataset,
    assert_same_release,
    centralized,
    hospital_dataset,
    read_release,
    rows,
    run_distributed,
)
from tests.distributed.recording import recording_federation
from tests.distributed.views import (
    changed,
    mask_free,
    pairwise_features,
    subset_sums,
    sum_features,
    union_features,
    view_of,
)
from tests.harness.wire import WireLog, union_items

MOVED = 120  # records each way between the two traders in a run B
RING = [f"hospital-{i + 1}" for i in range(3)]
PAD_TO = 700  # pairwise runs pad every union batch (> 1800 / 3 records per party)
# Union messages in small chunks, so that every union flow below travels in many of them and
# the views include the chunking (a party's batch is some 100 KB here).
CHUNK_BYTES = 16 << 10


@dataclass
class Run:
    """One recorded job: the wire log, each party's own statistics per iteration, the outputs."""

    log: WireLog
    own: dict[str, dict[int, np.ndarray]]
    release: pd.DataFrame
    sequence: list[object]


@dataclass
class Runs:
    """Runs A and A2 on one partition; per observer, run B where the two others traded."""

    first: Run
    again: Run
    moved: dict[str, Run]  # observer -> the run in which the other two parties traded records

    def other_data(self, role: str) -> Run:
        return self.moved[role if role in self.moved else RING[1]]


def moved_records(parts: list[pd.DataFrame], a: int, b: int) -> list[pd.DataFrame]:
    """Parties `a` and `b` trade MOVED records: same counts, same union, other statistics."""
    out = list(parts)
    out[a] = pd.concat([parts[a].iloc[MOVED:], parts[b].iloc[:MOVED]], ignore_index=True)
    out[b] = pd.concat([parts[b].iloc[MOVED:], parts[a].iloc[:MOVED]], ignore_index=True)
    return out


def _record(
    workdir: Path, dataset: Dataset, sum_mode: str, pad_to: int = 0, union_mode: str = "layered"
) -> Runs:
    parts = split_table(dataset.table, 3, "random", seed=4)
    first, again = _record_jobs(parts, dataset, workdir / "same", 2, sum_mode, pad_to, union_mode)
    moved = {}
    for observer in range(3):
        a, b = (i for i in range(3) if i != observer)
        (run,) = _record_jobs(
            moved_records(parts, a, b),
            dataset,
            workdir / f"moved-{observer}",
            1,
            sum_mode,
            pad_to,
            union_mode,
        )
        # The precondition of a view test: the outputs are the same in every run...
        assert rows(run.release) == rows(first.release)
        assert run.sequence == first.sequence
        # ... while the traders' own statistics are not.
        trader = RING[b]
        assert any(
            not np.array_equal(first.own[trader][t], run.own[trader][t]) for t in first.own[trader]
        ), "trading records changed no statistics"
        moved[RING[observer]] = run
    assert rows(again.release) == rows(first.release) and again.sequence == first.sequence
    return Runs(first, again, moved)


def _record_jobs(
    parts: list[pd.DataFrame],
    dataset: Dataset,
    workdir: Path,
    jobs: int,
    sum_mode: str,
    pad_to: int,
    union_mode: str = "layered",
) -> list[Run]:
    """`jobs` recorded jobs on one in-process federation, each with its own wire log."""
    spec = dataset.spec(L=3, K=20, C="0.2")
    reference = centralized(dataset, spec)
    runs = []
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        recording_federation(parts, dataset.taxonomy_path, workdir, monkeypatch) as fed,
    ):
        for job in range(jobs):
            with fed.log.lock:
                fed.log.items.clear()
            with fed.contributions.lock:
                fed.contributions.vectors.clear()
            out = workdir / f"release-{job}.csv"
            report = run_distributed(
                fed.hops,
                fed.leader_tls,
                dataset,
                spec,
                out,
                sum_mode=sum_mode,
                union_pad_to=pad_to,
                union_mode=union_mode,
                union_chunk_bytes=CHUNK_BYTES,
            )
            assert_same_release(out, report, reference)
            log = WireLog(list(fed.log.items))
            own: dict[str, dict[int, np.ndarray]] = {}
            for (name, t), vector in fed.contributions.vectors.items():
                own.setdefault(name, {})[t] = vector.copy()
            runs.append(Run(log, own, read_release(out), report["specialization_sequence"]))
    return runs


@pytest.fixture(scope="module")
def view_data() -> Dataset:
    return hospital_dataset(1800, seed=9)


@pytest.fixture(scope="module")
def ring_runs(tmp_path_factory: pytest.TempPathFactory, view_data: Dataset) -> Runs:
    return _record(tmp_path_factory.mktemp("ring-views"), view_data, "ring")


@pytest.fixture(scope="module")
def pairwise_runs(tmp_path_factory: pytest.TempPathFactory, view_data: Dataset) -> Runs:
    return _record(tmp_path_factory.mktemp("pairwise-views"), view_data, "pairwise", PAD_TO)


@pytest.fixture(scope="module")
def shuffle_runs(tmp_path_factory: pytest.TempPathFactory, view_data: Dataset) -> Runs:
    return _record(tmp_path_factory.mktemp("shuffle-views"), view_data, "ring", 0, "shuffle")


def _assert_same_view(runs: Runs, role: str, features: Callable[[Run], dict], what: str) -> None:
    """Every mask-free quantity `role` computes in run A is the same in its run B; and for a
    party, none of them is a sum of other parties' statistics (a trade between the two others
    leaves their sum unchanged, so this second check covers it)."""
    first, again, moved = (features(run) for run in (runs.first, runs.again, runs.other_data(role)))
    stable = mask_free(first, again)
    assert stable, f"{role} computes nothing mask-free from the {what} (the test saw nothing)"
    differ = changed(stable, moved)
    assert not differ, (
        f"{role} learns other parties' data from the {what}: "
        f"{len(differ)} mask-free quantities change with their records, "
        f"e.g. {differ[:3]}"
    )
    if role == LEADER_NAME:
        return
    own = runs.first.own
    for key, value in stable.items():
        t = key[0]
        if not isinstance(value, bytes) or not isinstance(t, int):
            continue
        others = [own[name][t] for name in RING if name != role and t in own[name]]
        leaked = value in subset_sums(others)
        assert not leaked, f"{role} computes a sum of other parties' statistics: {key}"


@pytest.mark.parametrize("role", ["hospital-1", "hospital-2", "hospital-3", LEADER_NAME])
def test_ring_sum_view_depends_only_on_the_outputs(ring_runs: Runs, role: str) -> None:
    """Ring sum: no role can compute anything about parties 1 and 3 beyond the global sums.

    Before the fix (total travelling back through the ring), hospital-2 computed the returned
    total minus the partial it forwarded: hospital-3's exact vector every iteration."""

    def features(run: Run) -> dict:
        return sum_features(view_of(run.log, role), run.own.get(role))

    _assert_same_view(ring_runs, role, features, "ring secure sum")


@pytest.mark.parametrize("role", ["hospital-1", "hospital-2", "hospital-3", LEADER_NAME])
def test_pairwise_sum_view_depends_only_on_the_outputs(pairwise_runs: Runs, role: str) -> None:
    """Pairwise sum: each share and each difference of shares is masked; the sum of the shares
    (the global sum, an output) is all the leader computes; parties see only instructions."""

    def features(run: Run) -> dict:
        view = view_of(run.log, role)
        return {**sum_features(view, run.own.get(role)), **pairwise_features(view)}

    _assert_same_view(pairwise_runs, role, features, "pairwise secure sum")


@pytest.mark.parametrize("mode", ["ring", "pairwise"])
@pytest.mark.parametrize("role", ["hospital-1", "hospital-2", "hospital-3", LEADER_NAME])
def test_union_view_depends_only_on_the_outputs(
    ring_runs: Runs, pairwise_runs: Runs, role: str, mode: str
) -> None:
    """Union COLLECT/STRIP: batch sizes, owner groups and overlaps between any two batches a
    role sees are the same when records move between the other parties (counts unchanged)."""
    runs = ring_runs if mode == "ring" else pairwise_runs

    def features(run: Run) -> dict:
        return union_features(view_of(run.log, role))

    _assert_same_view(runs, role, features, f"union ({mode} job)")


@pytest.mark.parametrize("role", ["hospital-1", "hospital-2", "hospital-3", LEADER_NAME])
def test_shuffle_union_view_depends_only_on_the_outputs(shuffle_runs: Runs, role: str) -> None:
    """Shuffle union (SHUFFLE_SHARE / SHUFFLE_STEP): every share a role receives is masked by a
    key it lacks, so only message counts and sizes are mask-free, and those do not change when
    records move between the other parties; the leader's output order is the same multiset
    in a fresh order every run (the composed permutation is secret)."""

    def features(run: Run) -> dict:
        return union_features(view_of(run.log, role))

    _assert_same_view(shuffle_runs, role, features, "shuffle union")
    run = shuffle_runs.first
    records = {
        pb.ReleasedRecord(values=list(row)).SerializeToString()
        for row in run.release.itertuples(index=False, name=None)
    }
    received = [
        bytes(item)
        for seen in view_of(run.log, role)
        if seen.method == "Union" and seen.direction == "received"
        for item in union_items(seen.message)
    ]
    assert received, f"{role} received no union items (the test saw nothing)"
    shown = [item for item in received if any(record in item for record in records)]
    assert not shown, f"{role} received a union message with a record in clear"
    if role == LEADER_NAME:
        first, again = (
            list(map(tuple, each.release.itertuples(index=False)))
            for each in (shuffle_runs.first, shuffle_runs.again)
        )
        assert sorted(first) == sorted(again) and first != again


@pytest.mark.parametrize("mode", ["layered", "shuffle"])
def test_union_messages_travel_in_chunks_of_bounded_size(
    ring_runs: Runs, shuffle_runs: Runs, mode: str
) -> None:
    """No union message carries more than the chunk size of items (plus one item, the least a
    chunk holds), and the batches did travel in several chunks (inputs and fetched outputs)."""
    log = (ring_runs if mode == "layered" else shuffle_runs).first.log
    messages = log.of(method="Union")
    largest_item = max(len(item) for m in messages for item in union_items(m.message))
    for m in messages:
        carried = sum(len(item) for item in union_items(m.message))
        assert carried <= CHUNK_BYTES + largest_item, f"{m.kind} of {carried} bytes"
    requests = [m.message for m in log.of(method="Union", kind="request")]
    assert any(r.chunks > 1 for r in requests), "no input travelled in several chunks"
    assert any(r.phase == pb.UNION_PHASE_FETCH for r in requests), "no output was fetched"
