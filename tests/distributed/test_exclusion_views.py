"""The leader's view of a job that reruns without a dropped party: exactly the bound that
docs/leakage.md ("Exclusion") states (#28).

Four recorded in-process daemons, all opted in (pairwise sum, shuffle union); hospital-3's
server stops for good right after the first specialization's secure sum, so the first attempt
completed the rounds up to it and the job reruns among the three others. Runs:

* A and A2 on the same tables: the quantities equal in both are the mask-free ones;
* B: the dropped party's table changed below every cut the first attempt reached (postcodes
  swapped between its records that agree on everything those rounds counted), survivors
  unchanged: every mask-free quantity of the leader must be the same as in A (the leader learns
  nothing of the dropped party beyond its statistics of the completed rounds);
* C: the dropped party's root statistics changed (one record's class): the leader's view does
  change, through the difference of the two attempts' totals at the root, which is exactly the
  dropped party's statistics vector of that round (the leak the opt-in accepts).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.tds.engine import StepInfo
from fedanon.leader.sim import LEADER_NAME, split_table
from tests.distributed.conftest import (
    Dataset,
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
    share_vectors,
    sum_features,
    union_features,
    view_of,
)
from tests.harness.wire import WireLog

DROPPED = "hospital-3"
VICTIM = 2
PARTIES = 4


@dataclasses.dataclass
class Run:
    """One recorded job with a dropout: the leader's features, the dropped party's plain
    vectors per round (the oracle), the release."""

    features: dict[Any, object]
    dropped_own: dict[int, np.ndarray]
    release: pd.DataFrame
    report: dict[str, Any]


def _attempts(log: WireLog) -> tuple[WireLog, WireLog]:
    """The log split at the rerun's first message (a handshake of another session)."""
    items = list(log.items)
    first_session = None
    for i, record in enumerate(items):
        if record.method != "OpenSession" or record.kind != "request":
            continue
        session = record.message.ref.session_id
        if first_session is None:
            first_session = session
        elif session != first_session:
            return WireLog(items[:i]), WireLog(items[i:])
    raise AssertionError("the job did not rerun")


def _leader_features(log: WireLog) -> dict[Any, object]:
    """What the leader computes from each attempt, and from the two together: the
    difference of their totals in every round both completed."""
    features: dict[Any, object] = {}
    totals = []
    for name, part in zip(("first", "rerun"), _attempts(log), strict=True):
        view = view_of(part, LEADER_NAME)
        for feature in (sum_features(view), pairwise_features(view), union_features(view)):
            features.update({(name, *key): value for key, value in feature.items()})
        shares = share_vectors(view)
        totals.append({t: np.sum(v, axis=0, dtype=np.uint64) for t, v in shares.items()})
    first, rerun = totals
    for t in sorted(set(first) & set(rerun)):
        if first[t].size == rerun[t].size:
            features[("first minus rerun", t)] = (first[t] - rerun[t]).tobytes()
    return features


def _run(parts: list[pd.DataFrame], data: Dataset, workdir: Path) -> Run:
    spec = data.spec(L=2, K=8, C="0.6")
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        recording_federation(parts, data.taxonomy_path, workdir, monkeypatch) as fed,
    ):
        for servicer in fed.servicers.values():
            policy = dataclasses.replace(servicer.config.policy, allow_exclusion=True)
            servicer.config = dataclasses.replace(servicer.config, policy=policy)
        stopped: list[int] = []

        def drop(step: StepInfo) -> None:
            if not stopped:
                stopped.append(step.iteration)
                fed.servers[DROPPED].stop(None).wait()

        out = workdir / "release.csv"
        report = run_distributed(
            fed.hops,
            fed.leader_tls,
            data,
            spec,
            out,
            on_step=drop,
            sum_mode="pairwise",
            union_mode="shuffle",
        )
        assert stopped == [1] and report["excluded"] == [DROPPED]
        own = {t: v.copy() for (n, t), v in fed.contributions.vectors.items() if n == DROPPED}
        features = _leader_features(WireLog(list(fed.log.items)))
    return Run(features, own, read_release(out), report)


def _swap_postcodes(table: pd.DataFrame) -> pd.DataFrame:
    """Rotate the postcode leaves (``A1A`` ...) among the records of each second-level region
    (``A1*``): every record keeps its other columns and its region, so every count of a cut
    that stops above the postcode's leaves is the same."""
    out = table.copy()
    for _, group in table.groupby(table["postcode"].str[:2], sort=False):
        out.loc[group.index, "postcode"] = np.roll(group["postcode"].to_numpy(), 1)
    assert not out.equals(table)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    data = hospital_dataset(1600, seed=21)
    parts = split_table(data.table, PARTIES, "random", seed=2)
    swapped = list(parts)
    swapped[VICTIM] = _swap_postcodes(parts[VICTIM])
    flipped = list(parts)
    flipped[VICTIM] = parts[VICTIM].copy()
    column = "readmitted"
    flipped[VICTIM].loc[flipped[VICTIM].index[0], column] = (
        "yes" if parts[VICTIM][column].iloc[0] == "no" else "no"
    )
    root = tmp_path_factory.mktemp("exclusion-views")
    variants = {"A": parts, "A2": parts, "B": swapped, "C": flipped}
    return {name: _run(tables, data, root / name) for name, tables in variants.items()}


def test_the_leader_learns_the_dropped_partys_statistics_of_the_completed_rounds(
    runs: dict[str, Run],
) -> None:
    """The difference of the two attempts' root totals is the dropped party's root vector
    (stated in docs/leakage.md); the rerun's release is the survivors' alone."""
    a = runs["A"]
    assert a.features[("first minus rerun", 0)] == a.dropped_own[0].tobytes()
    assert rows(runs["A2"].release) == rows(a.release)


def test_the_leader_learns_nothing_else_of_the_dropped_party(runs: dict[str, Run]) -> None:
    """B changes the dropped party's records below every cut of the completed rounds: every
    mask-free quantity of the leader's view is unchanged. C changes its root statistics: the
    difference of the attempts' root totals changes (the test sees the leak it bounds)."""
    a, b, c = runs["A"], runs["B"], runs["C"]
    assert set(a.dropped_own) == set(b.dropped_own) == {0, 1}
    for t in a.dropped_own:
        assert np.array_equal(a.dropped_own[t], b.dropped_own[t])
    stable = mask_free(a.features, runs["A2"].features)
    assert ("first minus rerun", 0) in stable and ("first minus rerun", 1) in stable
    assert not changed(stable, b.features)
    assert ("first minus rerun", 0) in changed(stable, c.features)
    assert rows(b.release) == rows(a.release) == rows(c.release)
