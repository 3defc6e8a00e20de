"""Federated kACTUS as a job kind: production party daemons (in this process, mutual TLS on
loopback, tests/harness/inprocess.py) and the leader's ``run_kactus``.

Oracles: centralized kACTUS on the pooled table (`induce`, `place_records`,
`prune_and_release`: the tree, every released group's path and size, and where nothing is
donated the release itself); the independent k-anonymity checker on the written release; and
the leader receives sums only: no message it receives holds a party's own vector, which the
test takes from the party's session (the ground truth, never a message).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import fedanon.leader.session
from fedanon.algorithms.kactus.api import anonymize_kactus
from fedanon.algorithms.kactus.phase2 import prune_and_release
from fedanon.algorithms.kactus.tree import induce, place_records
from fedanon.algorithms.tabular import encode_qid, generator
from fedanon.errors import FedanonError
from fedanon.federation.kactus_job import KactusOptions
from fedanon.leader.kinds.kactus import KactusLeaderJob, run_kactus
from fedanon.leader.sim import LEADER_NAME
from fedanon.models.k_anonymity import check_k_anonymity
from fedanon.party.handlers.kactus_session import KactusSession
from fedanon.utility.c45 import TreeNode
from tests.harness.cli import assert_one_line_error, run_cli
from tests.harness.inprocess import InProcessParties, inprocess_parties
from tests.harness.wire import ServedRecorder, WireLog, recording_channel_factory

QIDS = ["age", "ward", "dose", "sex"]


def _table(n: int, seed: int) -> pd.DataFrame:
    """Records whose outcome depends on age, ward and dose, with noise, a few missing ages
    (the root's residual) and a non-QID column with missing cells (released as they are)."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n).astype(object)
    age[rng.random(n) < 0.03] = None
    ward = rng.choice(["cardio", "neuro", "onco", "ortho"], n)
    dose = rng.integers(0, 12, n) * 5
    sex = rng.choice(["F", "M"], n)
    score = (
        (pd.to_numeric(pd.Series(age)).fillna(0).to_numpy() > 60).astype(int)
        + (ward == "onco")
        + (dose >= 30)
        + rng.binomial(1, 0.2, n)
    )
    outcome = np.where(score >= 2, "bad", np.where(score == 1, "fair", "good"))
    note = rng.choice(np.array(["seen", "urgent", None], dtype=object), n)  # not a QID
    return pd.DataFrame(
        {"age": age, "ward": ward, "dose": dose, "sex": sex, "note": note, "outcome": outcome}
    )


def _central(pooled: pd.DataFrame, k: int) -> tuple[TreeNode, list[tuple[str, int]], int]:
    """Centralized kACTUS's tree, sorted (group path, size) list and donated records."""
    columns = [encode_qid(pooled[c].astype(object), c) for c in QIDS]
    tree = induce(columns, pooled["outcome"].astype(str), k)
    root, residual = place_records(tree, columns)
    outcome = prune_and_release(root, residual, k, generator(5))
    groups = sorted((repr(g.path), len(g.rows)) for g in outcome.groups)
    return tree, groups, outcome.donated


def _same_tree(a: TreeNode, b: TreeNode) -> None:
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        assert (x.feature, x.numeric, x.rows) == (y.feature, y.numeric, y.rows)
        assert x.threshold == y.threshold or (np.isnan(x.threshold) and np.isnan(y.threshold))
        assert list(x.children) == list(y.children)
        stack.extend(zip(x.children.values(), y.children.values(), strict=True))


def _groups(report: dict[str, Any]) -> list[tuple[str, int]]:
    return sorted(zip(report["group_paths"], report["group_sizes"], strict=True))


def _by_parent(groups: list[tuple[str, int]]) -> dict[str, int]:
    """Group sizes summed per parent path (a path's text without its last test)."""
    totals: dict[str, int] = {}
    for path, size in groups:
        parent = path.rsplit("Condition(", 1)[0]
        totals[parent] = totals.get(parent, 0) + size
    return totals


class _Vectors:
    """Each party's own vectors (ground truth, recorded at the party's session)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, np.ndarray]] = []
        self.lock = threading.Lock()


@pytest.fixture
def recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[InProcessParties, WireLog, _Vectors, list[pd.DataFrame]]]:
    parts = [_table(n, seed) for seed, n in enumerate((300, 120, 60))]  # skewed split
    log = WireLog()
    store = _Vectors()
    original = KactusSession.contribution

    def contribution(self: KactusSession, request: Any) -> np.ndarray:
        vector = original(self, request)
        with store.lock:
            store.items.append((self.ring[self.position], np.array(vector, dtype="<u8")))
        return vector

    monkeypatch.setattr(KactusSession, "contribution", contribution)
    with inprocess_parties(
        parts,
        tmp_path / "fed",
        monkeypatch,
        ca_name="kactus kind test CA",
        server_interceptor=lambda name: ServedRecorder(name, log),
        hop_channel_factory=lambda name: recording_channel_factory(name, log),
    ) as fed:
        monkeypatch.setattr(
            fedanon.leader.session, "make_channel", recording_channel_factory(LEADER_NAME, log)
        )
        yield fed, log, store, parts


def _job(fed: InProcessParties, out: Path, k: int, **options: Any) -> KactusLeaderJob:
    return KactusLeaderJob(
        parties=fed.hops,
        tls=fed.leader_tls,
        options=KactusOptions(QIDS, "outcome", k, **options),
        out=out,
        seed=3,
        rpc_seconds=30.0,
    )


def _written(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


@pytest.mark.parametrize("sum_mode", ["ring", "pairwise"])
def test_the_federated_release_is_centralized_kactus_and_the_leader_sees_only_sums(
    recorded: tuple[InProcessParties, WireLog, _Vectors, list[pd.DataFrame]],
    tmp_path: Path,
    sum_mode: str,
) -> None:
    fed, log, vectors, parts = recorded
    pooled = pd.concat(parts, ignore_index=True)
    k = 25
    out = tmp_path / "release.csv"
    job = _job(fed, out, k)
    job.sum_mode = sum_mode
    report = run_kactus(job)

    _tree, groups, donated = _central(pooled, k)
    assert donated == 0  # this table needs no donation: every size is the centralized one
    assert report["tree"]["nodes"] > 5  # a real tree, not a stump
    assert _groups(report) == groups
    assert report["donated"] == 0 and report["privacy_check"]["ok"]
    released = _written(out)
    assert check_k_anonymity(released, QIDS, k).ok
    # Nothing donated: the same groups hold the same records, so the release is centralized
    # kACTUS's release up to row order (cells as text, as the union carries them).
    central = anonymize_kactus(pooled, class_column="outcome", qids=QIDS, k=k, seed=1).table
    central = central.astype(str).replace({"None": "", "nan": ""})
    key = list(pooled.columns)
    pd.testing.assert_frame_equal(
        released.sort_values(key).reset_index(drop=True),
        central[key].sort_values(key).reset_index(drop=True),
    )

    # Every summed step, every party contributed a vector; none reaches the leader.
    assert len(vectors.items) == 3 * report["sum_rounds"]
    wire = [r.data for r in log.of(role=LEADER_NAME, kind="reply")]
    assert wire, "the leader's replies were not recorded"
    checked = 0
    for party, vector in vectors.items:
        if vector.size >= 4 and np.count_nonzero(vector) >= 2:
            checked += 1
            assert not any(vector.tobytes() in data for data in wire), party
    assert checked > 0
    for reply in log.of(role=LEADER_NAME, method="KactusStep", kind="reply"):
        fields = reply.message.ListFields()
        assert fields == [] or [f.name for f, _ in fields] == ["length"]


def test_the_tree_is_the_centralized_tree_with_donations(
    recorded: tuple[InProcessParties, WireLog, _Vectors, list[pd.DataFrame]], tmp_path: Path
) -> None:
    """With a larger k phase 2 donates: the tree and the group paths are centralized
    kACTUS's, every group has k records or more, and the release passes the checker."""
    fed, _log, _vectors, parts = recorded
    pooled = pd.concat(parts, ignore_index=True)
    k = 30  # four records donated (centralized kACTUS on this pooled table)
    out = tmp_path / "release.csv"
    report = run_kactus(_job(fed, out, k, numeric="mean"))
    _tree, groups, donated = _central(pooled, k)
    assert donated > 0 and report["donated"] == donated
    # Which complying children fill a donation is random in both: the paths are the same,
    # and the sizes of the groups under one parent add up the same.
    fed_groups = _groups(report)
    assert [p for p, _ in fed_groups] == [p for p, _ in groups]
    assert _by_parent(fed_groups) == _by_parent(groups)
    assert min(report["group_sizes"]) >= k
    assert check_k_anonymity(_written(out), QIDS, k).ok


def test_a_party_refuses_a_job_its_table_cannot_serve(
    recorded: tuple[InProcessParties, WireLog, _Vectors, list[pd.DataFrame]], tmp_path: Path
) -> None:
    fed, _log, _vectors, _parts = recorded
    job = _job(fed, tmp_path / "release.csv", 10)
    job.options = KactusOptions([*QIDS, "weight"], "outcome", 10)
    with pytest.raises(FedanonError, match=r"hospital-1.*weight"):
        run_kactus(job)
    assert not (tmp_path / "release.csv").exists()


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--qid", "age,height"], ["height"]),
        (["--k", "1"], ["k"]),
        (["--parties", "2"], ["2 with --allow-two-parties"]),
    ],
)
def test_sim_kactus_refuses_a_bad_job_in_one_line_before_any_daemon(
    tmp_path: Path, extra: list[str], needles: list[str]
) -> None:
    data = tmp_path / "t.csv"
    _table(30, 0).to_csv(data, index=False)
    out = tmp_path / "release.csv"
    args: list[str | Path] = ["--data", data, "--class", "outcome", "--out", out, "--k", "5"]
    result = run_cli("sim", "kactus", *args, *extra)
    assert_one_line_error(result, *needles)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


def test_leader_run_with_a_kactus_section_writes_the_checked_release(
    recorded: tuple[InProcessParties, WireLog, _Vectors, list[pd.DataFrame]], tmp_path: Path
) -> None:
    fed, _log, _vectors, parts = recorded
    tls = fed.leader_tls
    out = tmp_path / "release.csv"
    config = tmp_path / "job.toml"
    config.write_text(
        f'out = "{out}"\n[kactus]\nqids = {QIDS!r}\nclass = "outcome"\nk = 25\n'.replace("'", '"')
        + "".join(f'[[parties]]\nname = "{h.name}"\naddress = "{h.address}"\n' for h in fed.hops)
        + f'[tls]\nca = "{tls.ca}"\ncert = "{tls.cert}"\nkey = "{tls.key}"\n',
        encoding="utf-8",
    )
    result = run_cli("leader", "run", "--config", config)
    assert result.code == 0, result.err
    assert "fedanon federated kACTUS" in result.out
    released = _written(out)
    _tree, groups, _donated = _central(pd.concat(parts, ignore_index=True), 25)
    assert len(released) == sum(s for _, s in groups)  # what centralized kACTUS releases
    assert check_k_anonymity(released, QIDS, 25).ok


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ('qids = ["age"]\nclass = "outcome"\nk = 1', "kactus.k"),
        ('qids = ["age", "outcome"]\nclass = "outcome"\nk = 5', "kactus.class"),
        ('qids = ["age"]\nclass = "outcome"\nk = 5\nnumeric = "mode"', "kactus.numeric"),
        ('qids = ["age"]\nk = 5', "class"),
    ],
)
def test_a_bad_kactus_section_is_one_line_naming_the_key(
    tmp_path: Path, section: str, needle: str
) -> None:
    config = tmp_path / "job.toml"
    config.write_text(
        f'out = "release.csv"\n[kactus]\n{section}\n'
        + "".join(f'[[parties]]\nname = "h{i}"\naddress = "127.0.0.1:1"\n' for i in range(3)),
        encoding="utf-8",
    )
    result = run_cli("leader", "run", "--config", config, "--insecure")
    assert_one_line_error(result, "job.toml", needle)
    assert not (tmp_path / "release.csv").exists()
