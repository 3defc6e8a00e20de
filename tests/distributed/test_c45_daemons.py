"""Federated C4.5 end to end over real party daemons, each its own process (leader/sim.py's
``federation``: mutual TLS on loopback, readiness by the health service), driven the two ways a
user drives it: a job.toml through ``fedanon leader run``, and ``fedanon sim c45``.

Oracle: ``fedanon.utility.c45.C45`` fitted on the pooled table; the federated tree's C4.5 text
form (every node's test, every leaf's rows and errors) must equal it.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fedanon.leader.federation import PartyFailure
from fedanon.leader.kinds.c45 import C45LeaderJob, SecureSumOracle, run_c45
from fedanon.leader.sim import federation
from fedanon.utility.c45 import C45
from tests.distributed.conftest import ADULT_CSV, requires_adult
from tests.distributed.test_c45_kind import FEATURES, NUMERIC, _table
from tests.harness.cli import run_cli

pytestmark = pytest.mark.slow


def _job_toml(path: Path, fed: object, out: Path, sum_mode: str | None) -> Path:
    """A [c45] job.toml over `fed`'s daemons; `sum_mode` None: the file names none."""
    tls = fed.leader_tls  # type: ignore[attr-defined]
    lines = [
        f'out = "{out}"',
        *([] if sum_mode is None else [f'sum_mode = "{sum_mode}"']),
        "[c45]",
        f"features = {json.dumps(FEATURES)}",
        f"numeric = {json.dumps(NUMERIC)}",
        'class = "outcome"',
        "min_leaf = 3",
        *(
            line
            for hop in fed.hops  # type: ignore[attr-defined]
            for line in ("[[parties]]", f'name = "{hop.name}"', f'address = "{hop.address}"')
        ),
        "[tls]",
        f'ca = "{tls.ca}"',
        f'cert = "{tls.cert}"',
        f'key = "{tls.key}"',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("sum_mode", "used"), [("ring", "ring"), ("pairwise", "pairwise"), (None, "pairwise")]
)
def test_leader_run_with_a_c45_section_grows_the_pooled_tree(
    tmp_path: Path, sum_mode: str | None, used: str
) -> None:
    """A job.toml naming no sum_mode sums pairwise (C4.5's default): the report says so and
    so does every party's audit line of the job it served (the mode its session runs)."""
    parts = [_table(n, seed) for seed, n in enumerate((300, 120, 45))]  # three, skewed
    pooled = pd.concat(parts, ignore_index=True)
    expected = C45(min_leaf=3).fit(pooled[FEATURES], pooled["outcome"], NUMERIC).to_text()
    out = tmp_path / "tree.txt"
    with federation(parts, None, workdir=tmp_path / "fed") as fed:
        config = _job_toml(tmp_path / "job.toml", fed, out, sum_mode)
        result = run_cli("leader", "run", "--config", config, "--json")
        audits = [_served_sum_mode(d.log) for d in fed.daemons]
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert out.read_text(encoding="utf-8") == expected + "\n"
    assert report["parties"] == ["hospital-1", "hospital-2", "hospital-3"]
    assert report["sum_mode"] == used and report["rounds"] >= 2
    assert audits == [f"SUM_MODE_{used.upper()}"] * 3


def _served_sum_mode(log: Path) -> str:
    """The sum mode of the one job a party daemon's log says it served."""
    lines = [x for x in log.read_text(encoding="utf-8").splitlines() if "audit: job served " in x]
    assert len(lines) == 1, lines
    served = json.loads(lines[0].split("audit: job served ", 1)[1])
    return str(served["parameters"]["sum_mode"])


@requires_adult
def test_sim_c45_on_adult_with_five_parties_equals_the_pooled_tree(tmp_path: Path) -> None:
    adult = pd.read_csv(ADULT_CSV, nrows=3000, dtype=str)
    data = tmp_path / "adult3k.csv"
    adult.to_csv(data, index=False)
    numeric = "age,fnlwgt,education-num,capital-gain,capital-loss,hours-per-week"
    out, report = tmp_path / "tree.txt", tmp_path / "report.json"
    result = run_cli(
        "sim", "c45", "--data", data, "--class", "class", "--numeric", numeric,
        "--parties", "5", "--out", out, "--report", report, "--quiet",
    )  # fmt: skip
    assert result.code == 0, result.err
    features = [c for c in adult.columns if c != "class"]
    expected = C45().fit(adult[features], adult["class"], numeric.split(",")).to_text()
    assert out.read_text(encoding="utf-8") == expected + "\n"
    written = json.loads(report.read_text(encoding="utf-8"))
    assert written["equals_centralized"] is True and len(written["parties"]) == 5
    assert written["sum_mode"] == "pairwise"  # no --sum-mode: the kind's default


@pytest.mark.parametrize(("victim", "at_round"), [("hospital-2", 1), ("hospital-3", 3)])
def test_a_party_killed_mid_tree_is_named_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, victim: str, at_round: int
) -> None:
    """SIGKILL one daemon right before a count round: the leader stops with one failure naming
    the party and the round's phase, within the deadline, and writes no tree."""
    parts = [_table(n, seed) for seed, n in enumerate((200, 100, 60))]
    original = SecureSumOracle.count

    with federation(parts, None, workdir=tmp_path / "fed") as fed:
        daemon = next(d for d in fed.daemons if d.name == victim)

        def count(self: SecureSumOracle, queries: Any) -> Any:
            if self.rounds + 1 == at_round:
                fed.stop(daemon, signal.SIGKILL)
            return original(self, queries)

        monkeypatch.setattr(SecureSumOracle, "count", count)
        out = tmp_path / "tree.txt"
        job = C45LeaderJob(
            parties=fed.hops,
            tls=fed.leader_tls,
            features=FEATURES,
            numeric=NUMERIC,
            class_column="outcome",
            out=out,
            rpc_seconds=20.0,  # a kind's first handshake at a daemon imports its module
        )
        began = time.monotonic()
        with pytest.raises(PartyFailure, match=rf"count queries, round {at_round}: party {victim}"):
            run_c45(job)
        assert time.monotonic() - began < 20.0 + 4.0 + 10.0  # deadline, abort, loaded machine
    assert not out.exists()


def test_sim_c45_over_the_outbound_transport_equals_the_pooled_tree(tmp_path: Path) -> None:
    """No party listens: every call, C45Count included, goes through the leader's relay."""
    table = _table(400, 7)
    data = tmp_path / "t.csv"
    table.to_csv(data, index=False)
    out = tmp_path / "tree.txt"
    result = run_cli(
        "sim", "c45", "--data", data, "--class", "outcome", "--numeric", ",".join(NUMERIC),
        "--transport", "outbound", "--out", out, "--quiet", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    expected = C45().fit(table[FEATURES], table["outcome"], NUMERIC).to_text()
    assert out.read_text(encoding="utf-8") == expected + "\n"
    assert json.loads(result.out)["equals_centralized"] is True
