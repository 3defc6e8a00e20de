"""What the leader of a federated BE/CE/UE run receives: production party daemons in this
process (mutual TLS on loopback, tests/harness/inprocess.py), every message recorded on the
wire (tests/harness/wire.py).

Oracle: each party's own vectors (its C4.5 counts and its (errors, rows) per figure), taken at
the party's session (ground truth, never a message), appear in no message the leader receives;
a test is answered with a length only. And a party whose policy does not serve the kind, or
forbids a QID leaving raw, refuses the handshake naming itself and the rule.
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
from fedanon.leader.federation import PartyFailure
from fedanon.leader.kinds.evaluate import EvaluateLeaderJob, run_evaluate
from fedanon.leader.sim import LEADER_NAME, split_table
from fedanon.party.handlers.evaluate_session import EvaluateSession
from fedanon.synth import hospital_taxonomy_path
from tests.distributed.conftest import centralized, hospital_dataset
from tests.harness.inprocess import InProcessParties, inprocess_parties
from tests.harness.wire import ServedRecorder, WireLog, recording_channel_factory


class _Vectors:
    def __init__(self) -> None:
        self.items: list[tuple[str, np.ndarray]] = []
        self.lock = threading.Lock()


@pytest.fixture
def recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[InProcessParties, WireLog, _Vectors, pd.DataFrame]]:
    dataset = hospital_dataset(900, seed=3)
    release = centralized(dataset, dataset.spec(L=2, K=20, C="0.5")).table
    parts = split_table(dataset.table, 3, "random", 2)
    log = WireLog()
    store = _Vectors()
    original = EvaluateSession.contribution

    def contribution(self: EvaluateSession, request: Any) -> np.ndarray:
        vector = original(self, request)
        with store.lock:
            store.items.append((self.ring[self.position], np.array(vector, dtype="<u8")))
        return vector

    monkeypatch.setattr(EvaluateSession, "contribution", contribution)
    with inprocess_parties(
        parts,
        tmp_path / "fed",
        monkeypatch,
        ca_name="evaluate view test CA",
        server_interceptor=lambda name: ServedRecorder(name, log),
        hop_channel_factory=lambda name: recording_channel_factory(name, log),
        taxonomy_of=lambda _i: hospital_taxonomy_path(),
    ) as fed:
        monkeypatch.setattr(
            fedanon.leader.session, "make_channel", recording_channel_factory(LEADER_NAME, log)
        )
        yield fed, log, store, release


def _job(fed: InProcessParties, release: pd.DataFrame, out: Path, **options: Any) -> Any:
    dataset = hospital_dataset(10, seed=3)
    return EvaluateLeaderJob(
        parties=fed.hops,
        tls=fed.leader_tls,
        release=release.astype(str),
        taxonomy=dataset.taxonomy,
        out=out,
        rpc_seconds=30.0,
        **options,
    )


@pytest.mark.parametrize("sum_mode", ["ring", "pairwise"])
def test_the_leader_receives_no_party_count(
    recorded: tuple[InProcessParties, WireLog, _Vectors, pd.DataFrame],
    tmp_path: Path,
    sum_mode: str,
) -> None:
    fed, log, store, release = recorded
    report = run_evaluate(_job(fed, release, tmp_path / "figures.json", sum_mode=sum_mode))
    errors = [(p, v) for p, v in store.items if v.size == 2]
    assert len(errors) == 3 * 3  # every party, every figure
    totals = np.sum([v for _, v in errors], axis=0)
    assert int(totals[1]) == 3 * report["n_test"]
    wire = [r.data for r in log.of(role=LEADER_NAME, kind="reply")]
    assert wire, "the leader's replies were not recorded"
    for party, vector in store.items:
        if np.count_nonzero(vector) >= 2 and vector.size >= 2:
            assert not any(vector.tobytes() in data for data in wire), (party, vector)
    for reply in log.of(role=LEADER_NAME, method="EvaluateClassify", kind="reply"):
        assert reply.message.ListFields() == [
            (reply.message.DESCRIPTOR.fields_by_name["length"], 2)
        ]


def test_a_party_that_serves_no_evaluation_refuses_it(
    recorded: tuple[InProcessParties, WireLog, _Vectors, pd.DataFrame],
    tmp_path: Path,
) -> None:
    fed, _log, _store, release = recorded
    shell = fed.servicers["hospital-2"]
    for policy, rule in (
        ({"job_kinds": ["lkc"]}, "job kind 'evaluate' not among its job_kinds"),
        ({"never_raw": ["age"]}, "column 'age' raw"),
    ):
        shell.config = _with_policy(shell.config, policy)
        out = tmp_path / "figures.json"
        with pytest.raises(PartyFailure, match=f"party hospital-2 refused: .*{rule}"):
            run_evaluate(_job(fed, release, out))
        assert not out.exists()


def _with_policy(config: Any, table: dict[str, Any]) -> Any:
    """`config` with party.toml's ``[policy]`` set to `table`, read as the daemon reads it (its
    schema fills in every default, so a new key cannot break this)."""
    from dataclasses import replace

    from fedanon.configschema import validate
    from fedanon.party.policy import POLICY_SCHEMA, Policy

    return replace(
        config, policy=Policy.from_table(validate(table, POLICY_SCHEMA, "test [policy]"))
    )
