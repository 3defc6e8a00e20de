"""Federated C4.5 as a job kind: production party daemons (in this process, mutual TLS on
loopback, tests/harness/inprocess.py) and the leader's ``run_c45``.

Oracles: the tree equals ``fedanon.utility.c45.C45`` fitted on the pooled table, node for node
(C4.5's text form carries every node's test and every leaf's rows and errors); and the leader
receives sums only: no message it receives holds a party's own count vector, which the test
takes from the party's session (the ground truth, never a message).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import fedanon.leader.kinds.c45
import fedanon.leader.session
from fedanon.errors import FedanonError
from fedanon.leader.kinds.c45 import C45LeaderJob, run_c45
from fedanon.leader.sim import LEADER_NAME
from fedanon.party.handlers.c45_session import C45Session
from fedanon.utility.c45 import C45
from tests.harness.cli import assert_one_line_error, run_cli
from tests.harness.inprocess import InProcessParties, inprocess_parties
from tests.harness.wire import ServedRecorder, WireLog, recording_channel_factory

FEATURES = ["age", "ward", "dose", "sex"]
NUMERIC = ["age", "dose"]


def _table(n: int, seed: int) -> pd.DataFrame:
    """Records whose class depends on age, ward and dose, with noise (a tree of a few levels
    that pruning trims)."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    ward = rng.choice(["cardio", "neuro", "onco", "ortho"], n)
    dose = rng.integers(0, 12, n) * 5
    sex = rng.choice(["F", "M"], n)
    score = (age > 60).astype(int) + (ward == "onco") + (dose >= 30) + rng.binomial(1, 0.2, n)
    outcome = np.where(score >= 2, "bad", np.where(score == 1, "fair", "good"))
    return pd.DataFrame({"age": age, "ward": ward, "dose": dose, "sex": sex, "outcome": outcome})


def _pooled_tree(parts: list[pd.DataFrame], **options: Any) -> C45:
    pooled = pd.concat(parts, ignore_index=True)
    return C45(**options).fit(pooled[FEATURES], pooled["outcome"], NUMERIC)


class _Vectors:
    """Each party's own count vectors (ground truth, recorded at the party's session)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, np.ndarray]] = []
        self.lock = threading.Lock()


def _record_vectors(monkeypatch: pytest.MonkeyPatch) -> _Vectors:
    store = _Vectors()
    original = C45Session.contribution

    def contribution(self: C45Session, request: Any) -> np.ndarray:
        vector = original(self, request)
        with store.lock:
            store.items.append((self.ring[self.position], np.array(vector, dtype="<u8")))
        return vector

    monkeypatch.setattr(C45Session, "contribution", contribution)
    return store


@pytest.fixture
def recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[InProcessParties, WireLog, _Vectors, list[pd.DataFrame]]]:
    parts = [_table(n, seed) for seed, n in enumerate((260, 90, 40))]  # skewed split
    log = WireLog()
    vectors = _record_vectors(monkeypatch)
    with inprocess_parties(
        parts,
        tmp_path / "fed",
        monkeypatch,
        ca_name="c45 kind test CA",
        server_interceptor=lambda name: ServedRecorder(name, log),
        hop_channel_factory=lambda name: recording_channel_factory(name, log),
    ) as fed:
        monkeypatch.setattr(
            fedanon.leader.session, "make_channel", recording_channel_factory(LEADER_NAME, log)
        )
        yield fed, log, vectors, parts


def _job(fed: InProcessParties, out: Path, **options: Any) -> C45LeaderJob:
    return C45LeaderJob(
        parties=fed.hops,
        tls=fed.leader_tls,
        features=FEATURES,
        numeric=NUMERIC,
        class_column="outcome",
        out=out,
        rpc_seconds=30.0,
        **options,
    )


@pytest.mark.parametrize("sum_mode", ["ring", "pairwise"])
def test_the_federated_tree_is_the_pooled_tree_and_the_leader_sees_only_sums(
    recorded: tuple[InProcessParties, WireLog, _Vectors, list[pd.DataFrame]],
    tmp_path: Path,
    sum_mode: str,
) -> None:
    fed, log, vectors, parts = recorded
    out = tmp_path / "tree.txt"
    report = run_c45(_job(fed, out, sum_mode=sum_mode))

    pooled = _pooled_tree(parts)
    assert out.read_text(encoding="utf-8") == pooled.to_text() + "\n"
    assert (report["nodes"], report["leaves"], report["depth"]) == (
        pooled.n_nodes,
        pooled.n_leaves,
        pooled.depth,
    )
    assert pooled.n_nodes > 5  # a real tree, not a stump

    # Every round, every party contributed a vector of the round's length.
    rounds = report["rounds"]
    assert rounds >= 2 and len(vectors.items) == 3 * rounds
    received = log.of(role=LEADER_NAME, kind="reply")
    assert received, "the leader's replies were not recorded"
    wire = [r.data for r in received]
    for party, vector in vectors.items:
        if vector.size >= 4 and np.count_nonzero(vector) >= 2:
            assert not any(vector.tobytes() in data for data in wire), party
    # Round 1 counts one per word; from round 2 on, fields of the record count's bit length.
    sent = [r.message.count_bits for r in log.of(method="C45Count", kind="request")]
    rows = sum(len(part) for part in parts)
    assert sent[:3] == [0, 0, 0] and set(sent[3:]) == {rows.bit_length()}
    # C45Count is answered with a length only, the same at every party.
    for reply in log.of(role=LEADER_NAME, method="C45Count", kind="reply"):
        assert reply.message.ListFields() == [
            (reply.message.DESCRIPTOR.fields_by_name["length"], reply.message.length)
        ]


def test_options_reach_the_learner_unpruned_and_narrowed(
    recorded: tuple[InProcessParties, WireLog, _Vectors, list[pd.DataFrame]], tmp_path: Path
) -> None:
    fed, _log, _vectors, parts = recorded
    out = tmp_path / "tree.txt"
    run_c45(_job(fed, out, min_leaf=5, prune=False, narrow=True))
    assert (
        out.read_text(encoding="utf-8")
        == _pooled_tree(parts, min_leaf=5, prune=False).to_text() + "\n"
    )
    assert _pooled_tree(parts, min_leaf=5, prune=False).to_text() != _pooled_tree(parts).to_text()


def test_a_party_refuses_a_task_its_table_cannot_serve(
    recorded: tuple[InProcessParties, WireLog, _Vectors, list[pd.DataFrame]], tmp_path: Path
) -> None:
    fed, _log, _vectors, _parts = recorded
    job = _job(fed, tmp_path / "tree.txt")
    job.features = [*FEATURES, "weight"]
    with pytest.raises(FedanonError, match=r"hospital-1.*weight"):
        run_c45(job)
    assert not (tmp_path / "tree.txt").exists()


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--numeric", "sex,height"], ["height"]),
        (["--features", "age,outcome"], ["outcome", "feature"]),
        (["--cf", "1.5"], ["cf"]),
        (["--parties", "2"], ["2 with --allow-two-parties"]),
    ],
)
def test_sim_c45_refuses_a_bad_task_in_one_line_before_any_daemon(
    tmp_path: Path, extra: list[str], needles: list[str]
) -> None:
    data = tmp_path / "t.csv"
    _table(30, 0).to_csv(data, index=False)
    out = tmp_path / "tree.txt"
    result = run_cli("sim", "c45", "--data", data, "--class", "outcome", "--out", out, *extra)
    assert_one_line_error(result, *needles)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ('features = ["age"]\nclass = "outcome"\ncf = 1.0', "c45.cf"),
        ('features = ["age"]\nnumeric = ["dose"]\nclass = "outcome"', "c45.numeric"),
        ('features = ["age", "outcome"]\nclass = "outcome"', "c45.class"),
        ('features = ["age"]', "class"),
    ],
)
def test_a_bad_c45_section_is_one_line_naming_the_key(
    tmp_path: Path, section: str, needle: str
) -> None:
    config = tmp_path / "job.toml"
    config.write_text(
        f'out = "tree.txt"\n[c45]\n{section}\n'
        + "".join(f'[[parties]]\nname = "h{i}"\naddress = "127.0.0.1:1"\n' for i in range(3)),
        encoding="utf-8",
    )
    result = run_cli("leader", "run", "--config", config, "--insecure")
    assert_one_line_error(result, "job.toml", needle)
    assert not (tmp_path / "tree.txt").exists()


def test_a_batch_larger_than_a_round_is_summed_over_several_rounds(
    recorded: tuple[InProcessParties, WireLog, _Vectors, list[pd.DataFrame]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a cap of 40 words per round (a histogram here holds 3 x (4 + 2 + numeric values)
    counts, packed several to a word after the first round, far above it), every round holds
    at most 40 words or a single query, and the tree is unchanged."""
    fed, log, _vectors, parts = recorded
    out = tmp_path / "tree.txt"
    whole = run_c45(_job(fed, out))
    monkeypatch.setattr(fedanon.leader.kinds.c45, "MAX_ROUND_COUNTS", 40)
    split = run_c45(_job(fed, out))
    assert out.read_text(encoding="utf-8") == _pooled_tree(parts).to_text() + "\n"
    assert split["counts_summed"] == whole["counts_summed"]
    assert split["rounds"] > whole["rounds"]
    served = log.of(method="C45Count", kind="request")[-3 * split["rounds"] :]
    assert all(r.answer.length <= 40 or len(r.message.batch.path) == 1 for r in served)
    assert any(len(r.message.batch.path) == 1 and r.answer.length > 40 for r in served)


def test_leader_run_prints_the_kinds_summary_under_its_title(
    recorded: tuple[InProcessParties, WireLog, _Vectors, list[pd.DataFrame]], tmp_path: Path
) -> None:
    fed, _log, _vectors, parts = recorded
    tls = fed.leader_tls
    config = tmp_path / "job.toml"
    config.write_text(
        f'out = "{tmp_path / "tree.txt"}"\n[c45]\nfeatures = {FEATURES!r}\n'.replace("'", '"')
        + f'numeric = {NUMERIC!r}\nclass = "outcome"\n'.replace("'", '"')
        + "".join(f'[[parties]]\nname = "{h.name}"\naddress = "{h.address}"\n' for h in fed.hops)
        + f'[tls]\nca = "{tls.ca}"\ncert = "{tls.cert}"\nkey = "{tls.key}"\n',
        encoding="utf-8",
    )
    result = run_cli("leader", "run", "--config", config)
    assert result.code == 0, result.err
    pooled = _pooled_tree(parts)
    assert "fedanon federated C4.5" in result.out
    assert f"{pooled.n_nodes} nodes, {pooled.n_leaves} leaves, depth {pooled.depth}" in result.out
    assert (tmp_path / "tree.txt").read_text(encoding="utf-8") == pooled.to_text() + "\n"
