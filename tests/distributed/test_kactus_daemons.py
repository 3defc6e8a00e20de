"""Federated kACTUS with party daemons in separate processes (slow): `sim kactus` against
`anonymize kactus` on the pooled table, over both transports, and a party killed mid-run.

Oracle: where nothing is donated, the same groups hold the same records, so the federated
release equals centralized kACTUS's release up to row order; otherwise, the independent
k-anonymity checker and the group sizes per parent.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fedanon.algorithms.kactus.federated_party import Step
from fedanon.federation.kactus_job import KactusOptions
from fedanon.leader.federation import PartyFailure
from fedanon.leader.kinds.kactus import DaemonChannel, KactusLeaderJob, run_kactus
from fedanon.leader.sim import federation
from fedanon.models.k_anonymity import check_k_anonymity
from fedanon.utility.benchmark_tables import has_table, load_table
from tests.distributed.test_kactus_kind import QIDS, _table
from tests.harness.cli import run_cli

pytestmark = pytest.mark.slow


def _sorted(path: Path) -> pd.DataFrame:
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    return table.sort_values(list(table.columns)).reset_index(drop=True)


@pytest.mark.parametrize(
    ("transport", "sum_mode", "parties"),
    [("direct", "pairwise", 5), ("outbound", "ring", 3)],
)
def test_sim_kactus_on_pima_is_anonymize_kactus(
    tmp_path: Path, transport: str, sum_mode: str, parties: int
) -> None:
    if not has_table("pima"):
        pytest.skip("shared pima data not present")
    data = tmp_path / "pima.csv"
    load_table("pima").to_csv(data, index=False)
    common: list[str | Path] = [
        "--data",
        data,
        "--class",
        "class",
        "--k",
        "20",
        "--seed",
        "3",
        "--quiet",
    ]
    central = tmp_path / "central.csv"
    assert run_cli("anonymize", "kactus", *common, "--out", central).code == 0
    out, report = tmp_path / "federated.csv", tmp_path / "report.json"
    result = run_cli(
        "sim", "kactus", *common, "--parties", str(parties), "--sum-mode", sum_mode,
        "--transport", transport, "--out", out, "--report", report,
    )  # fmt: skip
    assert result.code == 0, result.err
    written = json.loads(report.read_text(encoding="utf-8"))
    assert written["donated"] == 0 and written["privacy_check"]["ok"]
    pd.testing.assert_frame_equal(_sorted(out), _sorted(central))


@pytest.mark.parametrize(("victim", "step"), [("hospital-2", "place"), ("hospital-3", "values")])
def test_a_party_killed_mid_run_is_named_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, victim: str, step: str
) -> None:
    """SIGKILL one daemon right before a step: the leader stops with one failure naming the
    party and the step, within the deadline, and writes no release."""
    parts = [_table(n, seed) for seed, n in enumerate((200, 100, 60))]
    original = DaemonChannel._send

    with federation(parts, None, workdir=tmp_path / "fed") as fed:
        daemon = next(d for d in fed.daemons if d.name == victim)

        def send(self: DaemonChannel, sent: Step) -> Any:
            if sent.name == step:
                fed.stop(daemon, signal.SIGKILL)
            return original(self, sent)

        monkeypatch.setattr(DaemonChannel, "_send", send)
        out = tmp_path / "release.csv"
        job = KactusLeaderJob(
            parties=fed.hops,
            tls=fed.leader_tls,
            options=KactusOptions(QIDS, "outcome", 20),
            out=out,
            rpc_seconds=20.0,  # a kind's first handshake at a daemon imports its module
        )
        began = time.monotonic()
        with pytest.raises(PartyFailure, match=rf"kACTUS step {step}, iteration \d+: .*{victim}"):
            run_kactus(job)
        assert time.monotonic() - began < 20.0 + 4.0 + 10.0  # deadline, abort, loaded machine
    assert not out.exists()


def test_sim_kactus_with_donations_passes_the_checker(tmp_path: Path) -> None:
    """German, k=10, three parties: phase 2 donates; the written release is k-anonymous and
    holds every record centralized kACTUS releases."""
    if not has_table("german"):
        pytest.skip("shared german data not present")
    data = tmp_path / "german.csv"
    load_table("german").to_csv(data, index=False)
    out, report = tmp_path / "federated.csv", tmp_path / "report.json"
    result = run_cli(
        "sim", "kactus", "--data", data, "--class", "class", "--k", "10", "--quiet",
        "--out", out, "--report", report,
    )  # fmt: skip
    assert result.code == 0, result.err
    written = json.loads(report.read_text(encoding="utf-8"))
    assert written["donated"] > 0
    assert written["sum_mode"] == "pairwise"  # no --sum-mode: the kind's default
    released = pd.read_csv(out, dtype=str, keep_default_na=False)
    qids = written["parameters"]["qids"]
    assert check_k_anonymity(released, qids, 10).ok
    central = tmp_path / "central.csv"
    common: list[str | Path] = ["--data", data, "--class", "class", "--k", "10", "--quiet"]
    assert run_cli("anonymize", "kactus", *common, "--out", central).code == 0
    assert len(released) == len(pd.read_csv(central, dtype=str))
