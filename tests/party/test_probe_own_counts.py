"""A rerun's prefix probe counts only the own counts it answers (#28, session 12, h-replay).

A survivor's probe replays the lost attempt's specializations and answers the own counts
(slot 0) of the live groups at its last cut; it used to count every attribute's children
blocks on the way, about 60 % of its work. Its answer must stay exactly the survivor's
records per group of that cut, which these tests count with pandas from the records and the
taxonomy's atom ranges (not with the party's counting), and the adoption that follows must
still carry the full statistics.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.algorithms.tds.layout import Specialization, StatsLayout, carried
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.algorithms.tds.prefix import apply_all, replayed
from fedanon.federation.wire import to_instruction
from fedanon.leader.sim import split_table
from fedanon.party.handlers.lkc_session import LKCSession
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.schema import Schema
from tests.distributed.conftest import Dataset, adult_dataset, hospital_dataset, requires_adult
from tests.lkc.test_prefix_resume import _recorded_run

SESSION = "cd" * 16


def _log(data: Dataset, spec: LKCJobSpec) -> tuple[Schema, list[Specialization]]:
    """The whole table's uninterrupted run: its schema and steps (masks over every party)."""
    schema = spec.schema(data.taxonomy)
    table = data.table.drop(columns=list(spec.drop))
    return schema, _recorded_run(schema, table, spec.params, spec.score)[2].steps


def _session(data: Dataset, spec: LKCJobSpec, part: pd.DataFrame) -> LKCSession:
    """A survivor's session in a rerun's attempt (only there is a prefix probe taken)."""
    party = LKCSession(
        SESSION, spec, spec.schema(data.taxonomy), part, ["a", "b"], "a", pb.SUM_MODE_PAIRWISE
    )
    party.attempt = 1
    return party


def _probe(steps: list[Specialization]) -> pb.SumRequest:
    return pb.SumRequest(
        ref=pb.SessionRef(session_id=SESSION, iteration=0, attempt=1),
        prefix_probe=pb.PrefixProbe(instructions=[to_instruction(s) for s in steps]),
    )


def _adopt(steps: list[Specialization]) -> pb.SumRequest:
    return pb.SumRequest(
        ref=pb.SessionRef(session_id=SESSION, iteration=1, attempt=1),
        prefix_adopt=pb.PrefixAdopt(instructions=[to_instruction(s) for s in steps]),
    )


def _pandas_counts(schema: Schema, part: pd.DataFrame, steps: list[Specialization]) -> np.ndarray:
    """(live groups x channels) of `part` at the cut `steps` reach, in partition order:
    each record's group found from the cut node whose atom range holds its value, counted
    with pandas (records, each class value, each sensitive value)."""
    table, _ = apply_all(schema, steps)
    live = table.keys[table.live_indices()]
    cut = [sorted(set(live[:, a].tolist())) for a in range(live.shape[1])]
    frame = pd.DataFrame(index=part.index)
    for a, tax in enumerate(schema.taxonomies):
        atoms = tax.encode(part[tax.attribute].astype(str).to_numpy(dtype=object))
        node = np.full(len(part), -1)
        for n in cut[a]:
            node[(atoms >= tax.atom_lo[n]) & (atoms < tax.atom_hi[n])] = n
        assert (node >= 0).all()
        frame[f"q{a}"] = node
    frame["records"] = 1
    for i, value in enumerate(schema.class_values):
        frame[f"c{i}"] = (part[schema.class_column].astype(str) == value).astype(int)
    for j, s in enumerate(schema.sensitive):
        frame[f"s{j}"] = (part[s.column].astype(str) == s.value).astype(int)
    qids = [f"q{a}" for a in range(live.shape[1])]
    counts = frame.groupby(qids).sum()
    out = np.zeros((live.shape[0], counts.shape[1]), dtype=np.int64)
    for row, key in enumerate(map(tuple, live.tolist())):
        if key in counts.index:
            out[row] = counts.loc[key].to_numpy()
    assert out[:, 0].sum() == len(part)  # every record in exactly one live group
    return out


def _cases() -> Iterator[Any]:
    hospital = hospital_dataset(900, seed=21)
    spec = hospital.spec(L=2, K=5, C="0.6", sensitive={"diagnosis": ["HIV"]})
    yield pytest.param(hospital, spec, 3, "random", id="hospital-3-random")
    yield pytest.param(hospital, spec, 4, "by-column=diagnosis", id="hospital-by-diagnosis")
    deeper = hospital.spec(L=3, K=3, C="0.9", score="discernibility")
    yield pytest.param(hospital, deeper, 5, "random", id="hospital-5-discernibility")
    yield pytest.param(
        None, None, 20, "random", id="adult-20-random", marks=requires_adult
    )  # Adult is loaded in the test (shared data)


@pytest.mark.parametrize(("data", "spec", "parties", "how"), list(_cases()))
def test_the_probe_answers_each_survivors_records_per_group_of_the_cut(
    data: Dataset | None, spec: LKCJobSpec | None, parties: int, how: str
) -> None:
    if data is None:
        data = adult_dataset()
        spec = data.spec(L=2, K=10, C="0.5")
    assert spec is not None
    schema, steps = _log(data, spec)
    assert len(steps) >= 3, "the job must specialize a few times for the test to mean much"
    parts = split_table(data.table, parties, how, seed=28)
    for part in parts[:3]:
        for j in sorted({0, 1, len(steps) // 2, len(steps)}):
            answer = _session(data, spec, part).contribution(_probe(steps[:j]))
            expected = _pandas_counts(schema, part, steps[:j])
            assert np.array_equal(answer.view(np.int64).reshape(expected.shape), expected), j
            # and what the full replay (the adoption's, the old probe's) counts there
            local = LocalParty(schema, part.drop(columns=list(spec.drop)))
            assert np.array_equal(replayed(local, schema, steps[:j])[1][:, 0, :], expected)


@pytest.fixture
def histograms() -> Iterator[list[int]]:
    """The width of every children-block histogram a ``LocalParty`` counts meanwhile."""
    made: list[int] = []
    histogram = LocalParty._histogram

    def counted(self: LocalParty, cell: Any, slot: Any, n_parts: int, width: int) -> Any:
        made.append(width)
        return histogram(self, cell, slot, n_parts, width)

    with mock.patch.object(LocalParty, "_histogram", counted):
        yield made


def test_the_probe_counts_one_block_a_step_and_the_adoption_every_block(
    histograms: list[int],
) -> None:
    """The probe's replay histograms the records once per step (the specialized attribute's
    block, whose pass gives the own counts): none for the other attributes, none at the
    roots. The adoption after it starts afresh and carries every block, as before."""
    data = hospital_dataset(900, seed=21)
    spec = data.spec(L=2, K=5, C="0.6", sensitive={"diagnosis": ["HIV"]})
    schema, steps = _log(data, spec)
    part = split_table(data.table, 3, "random", seed=28)[1]
    party = _session(data, spec, part)
    histograms.clear()
    party.contribution(_probe(steps))
    assert len(histograms) == len(steps), histograms
    kept = len(steps) // 2
    adopted = party.contribution(_adopt(steps[:kept]))
    assert len(histograms) > 2 * kept  # the other attributes' blocks counted again
    # the adoption's vector: the full statistics of the prefix's live groups, carried entries
    local = LocalParty(schema, part.drop(columns=list(spec.drop)))
    table, live = replayed(local, schema, steps[:kept])
    keys = table.keys[table.live_indices()]
    layout = StatsLayout.for_schema(schema)
    flat = np.ascontiguousarray(live).reshape(-1).view(np.uint64)
    assert np.array_equal(adopted, flat[carried(layout, schema, keys)])
    assert np.count_nonzero(live[:, 1:, :]) > 0  # children blocks there to compare


def test_a_dask_partys_probe_counts_own_counts_only_and_survives_a_lost_shard(
    histograms: list[int],
) -> None:
    """The Dask engine's shards count only the own counts in a probe too (one histogram per
    step and shard), a shard lost half way is reloaded and replays the log with it, and the
    answer is the survivor's records per group of the cut."""
    pytest.importorskip("distributed")
    from distributed import Client

    from fedanon.algorithms.tds.engines import EngineSettings, sharded
    from fedanon.algorithms.tds.engines.sharded import DaskEngine, loopback_cluster

    data = hospital_dataset(900, seed=21)
    spec = data.spec(L=2, K=5, C="0.6", sensitive={"diagnosis": ["HIV"]})
    schema, steps = _log(data, spec)
    part = split_table(data.table, 3, "random", seed=28)[1]
    expected = _pandas_counts(schema, part, steps)
    with (
        loopback_cluster(
            n_workers=1,
            threads_per_worker=2,
            processes=False,
        ) as cluster,
        Client(cluster) as client,
    ):
        engine = DaskEngine(EngineSettings("dask", shards=2), client)
        try:
            party = LKCSession(
                SESSION,
                spec,
                spec.schema(data.taxonomy),
                part,
                ["a", "b"],
                "a",
                pb.SUM_MODE_PAIRWISE,
                engine,
            )
            party.attempt = 1
            counting = party.local
            specialize = counting.specialize

            def lose_a_shard(step: Specialization) -> Any:
                if len(histograms) == 2 * (len(steps) // 2):  # half way: shard 1 forgotten
                    del sharded._SHARDS[counting._keys[1]]  # type: ignore[attr-defined]
                return specialize(step)

            counting.specialize = lose_a_shard  # type: ignore[method-assign]
            histograms.clear()
            answer = party.contribution(_probe(steps))
            assert counting.recoveries == 1  # type: ignore[attr-defined]
            reloaded = len(steps) // 2  # the lost shard's steps replayed: own counts only
            assert len(histograms) == 2 * len(steps) + reloaded, histograms
            assert np.array_equal(answer.view(np.int64).reshape(expected.shape), expected)
        finally:
            engine.close()  # the run's shards and the kept encodings dropped
