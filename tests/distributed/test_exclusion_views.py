"""The leader's view of a job that reruns without a dropped party: exactly the bound that
docs/leakage.md ("Exclusion") states (#28).

Four recorded in-process daemons, all opted in (pairwise sum, shuffle union); hospital-3's
server stops for good right after the first specialization's secure sum, so the first attempt
completed the rounds up to it (iterations 0 and 1) and the job reruns among the three others,
resumed from that cut c_1: the rerun's iteration 0 probes the survivors' own counts at c_1,
its iteration 1 adopts c_1 (their full statistics there). Runs:

* A and A2 on the same tables: the quantities equal in both are the mask-free ones;
* B: the dropped party's table changed below every cut the first attempt reached (postcodes
  swapped between its records that agree on everything those rounds counted), survivors
  unchanged: every mask-free quantity of the leader must be the same as in A (the leader learns
  nothing of the dropped party beyond its statistics of the completed rounds);
* C: the dropped party's statistics at c_1 changed (one record's class): the leader's view
  does change, through the differences of the two attempts' totals at the probed cut, which
  are exactly the dropped party's own counts there (the probe) and its whole state there
  (the adoption, here the first attempt's round-1 vector): the leak the opt-in accepts.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.tds.engine import StepInfo
from fedanon.algorithms.tds.layout import CarriedMasks, StatsLayout, restored
from fedanon.federation.wire import from_instruction
from fedanon.leader.sim import LEADER_NAME, split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.schema import Schema
from tests.distributed.conftest import (
    Dataset,
    hospital_dataset,
    read_release,
    rows,
    run_distributed,
)
from tests.distributed.recording import recording_federation
from tests.distributed.views import (
    Seen,
    changed,
    mask_free,
    pairwise_features,
    share_vector,
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
    dropped_c1: np.ndarray  # the dropped party's own counts at c_1 (from its round-1 vector)
    release: pd.DataFrame
    report: dict[str, Any]
    # Each survivor's plain vectors per (party, attempt, round) (the oracle).
    survivors: dict[tuple[str, int, int], np.ndarray]


def _attempts(log: WireLog) -> tuple[WireLog, WireLog]:
    """The log split at the rerun's first message (the leader's ``Rerun``: the same session's
    next attempt, no second handshake)."""
    items = list(log.items)
    handshakes = [r for r in items if r.method == "OpenSession" and r.kind == "request"]
    assert len({r.message.ref.session_id for r in handshakes}) == 1
    for i, record in enumerate(items):
        if record.method == "Rerun" and record.kind == "request":
            assert record.message.ref.attempt == 1
            return WireLog(items[:i]), WireLog(items[i:])
    raise AssertionError("the job did not rerun")


def _shares_by_party(view: list[Seen]) -> dict[tuple[str, int], np.ndarray]:
    """Each party's masked share per round, as the leader received it."""
    out: dict[tuple[str, int], np.ndarray] = {}
    rounds: dict[str, int] = {}
    for s in view:
        if s.method == "Sum" and s.kind == "reply" and s.message.pairwise_share:
            t = rounds[str(s.other)] = rounds.get(str(s.other), -1) + 1
            out[(str(s.other), t)] = share_vector(bytes(s.message.pairwise_share))
    return out


def _own_at_c1(vector: np.ndarray, instruction: pb.Instruction, schema: Schema) -> np.ndarray:
    """The own counts (partitions x channels) of the partitions of c_1 in a round-1 vector
    (the carried entries of the root's children on the first step's attribute)."""
    layout = StatsLayout.for_schema(schema)
    masks = CarriedMasks(layout, schema)
    masks.start()
    children = len(schema.taxonomies[instruction.attr].children[instruction.node])
    step = from_instruction(instruction, 1, children)
    mask = masks.specialize(step)
    full = layout.unflatten(restored(vector, mask), int(step.nonempty.sum()))
    return full[:, 0, :]


def _first_instruction(view: list[Seen]) -> pb.Instruction:
    return next(
        s.message.instruction
        for s in view
        if s.method == "Sum" and s.kind == "request" and s.message.HasField("instruction")
    )


def _leader_features(log: WireLog, schema: Schema) -> dict[Any, object]:
    """What the leader computes from each attempt, and from the two together: the
    difference of their totals in every round both ran with one layout (the adoption of c_1
    and the first attempt's round 1), and the first attempt's own counts at c_1 less the
    probe's."""
    features: dict[Any, object] = {}
    totals = []
    views = []
    for name, part in zip(("first", "rerun"), _attempts(log), strict=True):
        view = view_of(part, LEADER_NAME)
        views.append(view)
        for feature in (sum_features(view), pairwise_features(view), union_features(view)):
            features.update({(name, *key): value for key, value in feature.items()})
        shares = share_vectors(view)
        totals.append({t: np.sum(v, axis=0, dtype=np.uint64) for t, v in shares.items()})
    first, rerun = totals
    before, after = (_shares_by_party(view) for view in views)
    for (name, t), share in after.items():
        if (name, t) in before and before[(name, t)].size == share.size:
            features[("share across attempts", name, t)] = (share - before[(name, t)]).tobytes()
    for t in sorted(set(first) & set(rerun)):
        if first[t].size == rerun[t].size:
            features[("first minus rerun", t)] = (first[t] - rerun[t]).tobytes()
    own = _own_at_c1(np.asarray(first[1]), _first_instruction(views[0]), schema)
    probe = rerun[0].view(np.int64).reshape(own.shape)
    features["first minus probe at c_1"] = (own - probe).tobytes()
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
        assert report["resumed_from"] == 1
        own = {t: v.copy() for (n, t), v in fed.contributions.vectors.items() if n == DROPPED}
        plain = {k: v.copy() for k, v in fed.contributions.by_attempt.items() if k[0] != DROPPED}
        log = WireLog(list(fed.log.items))
        schema = spec.schema(data.taxonomy)
        features = _leader_features(log, schema)
        ins = _first_instruction(view_of(_attempts(log)[0], LEADER_NAME))
        dropped_c1 = _own_at_c1(own[1], ins, schema)
    return Run(features, own, dropped_c1, read_release(out), report, plain)


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


def test_the_leader_learns_the_dropped_partys_state_at_the_probed_cut(
    runs: dict[str, Run],
) -> None:
    """The difference of the first attempt's round-1 totals and the adoption's is the dropped
    party's round-1 vector (its whole state at c_1); the first attempt's own counts at c_1
    less the probe's are its own counts there (stated in docs/leakage.md). The rerun's
    release is the survivors' alone."""
    a = runs["A"]
    assert a.features[("first minus rerun", 1)] == a.dropped_own[1].tobytes()
    assert a.features["first minus probe at c_1"] == a.dropped_c1.tobytes()
    assert rows(runs["A2"].release) == rows(a.release)


def test_the_leader_learns_nothing_else_of_the_dropped_party(runs: dict[str, Run]) -> None:
    """B changes the dropped party's records below every cut of the completed rounds: every
    mask-free quantity of the leader's view is unchanged. C changes its statistics at the
    probed cut: both differences change (the test sees the leak it bounds)."""
    a, b, c = runs["A"], runs["B"], runs["C"]
    assert set(a.dropped_own) == set(b.dropped_own) == {0, 1}
    for t in a.dropped_own:
        assert np.array_equal(a.dropped_own[t], b.dropped_own[t])
    stable = mask_free(a.features, runs["A2"].features)
    assert ("first minus rerun", 1) in stable and "first minus probe at c_1" in stable
    assert not changed(stable, b.features)
    moved = changed(stable, c.features)
    assert ("first minus rerun", 1) in moved and "first minus probe at c_1" in moved
    assert rows(b.release) == rows(a.release) == rows(c.release)


def test_a_survivors_masks_of_the_rerun_are_independent_of_the_first_attempts(
    runs: dict[str, Run],
) -> None:
    """The rerun is the same session's next attempt (the same pair secrets), yet the
    difference of a survivor's masked shares of one round across the two attempts is not its
    vectors' difference (round 1 adopts c_1, where its vector is the one it sent in the first
    attempt: the difference would be zero) and differs between two runs on the same tables:
    fresh masks, so the two attempts together give the leader nothing of a survivor beyond
    the totals (docs/leakage.md, "Exclusion")."""
    a, again = runs["A"], runs["A2"]
    across = [k for k in a.features if k[0] == "share across attempts"]
    survivors = {name for name, _, _ in a.survivors}
    assert {k[1] for k in across} == survivors and any(k[2] == 1 for k in across)
    stable = mask_free(a.features, again.features)
    for key in across:
        _, name, t = key
        assert key not in stable, key
        plain = a.survivors[(name, 1, t)] - a.survivors[(name, 0, t)]
        assert a.features[key] != plain.tobytes(), key
    for name in survivors:
        assert np.array_equal(a.survivors[(name, 1, 1)], a.survivors[(name, 0, 1)])
