"""A party frozen (SIGSTOP: its connections stay open, it answers nothing) in the own step of a
classification kind: C4.5's ``C45Count``, kACTUS's ``KactusStep`` and the evaluation's
``EvaluateClassify``, on the shared hospital federation (real daemons, mutual TLS).

Whatever the kind, the leader must end the job by the step's deadline (plus the abort and a
margin for a loaded machine) with one line naming the phase and the party, write nothing, and
leave every daemon running: once the party is resumed, the next job runs at once (the freeze
harness of test_faults_phases.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fedanon.federation.kactus_job import KactusOptions
from fedanon.leader.federation import PartyFailure
from fedanon.leader.kinds.c45 import C45LeaderJob, run_c45
from fedanon.leader.kinds.evaluate import EvaluateLeaderJob, run_evaluate
from fedanon.leader.kinds.kactus import KactusLeaderJob, run_kactus
from fedanon.leader.session import Session
from fedanon.leader.sim import Federation
from tests.distributed.conftest import Dataset, centralized, party_processes, status
from tests.distributed.test_faults_phases import (
    AFTER_DEADLINE_SECONDS,
    MARGIN_SECONDS,
    RPC_SECONDS,
    Fault,
    fault_of,
)

pytestmark = pytest.mark.slow

__all__ = ["fault_of"]  # the fixture, shared with the phase matrix

FEATURES = ["age", "sex", "employment", "admission_type", "length_of_stay"]
NUMERIC = ["age", "length_of_stay"]


def _c45(fed: Federation, data: Dataset, out: Path) -> tuple[Any, Callable[[Any], Any]]:
    job = C45LeaderJob(
        parties=fed.hops,
        tls=fed.leader_tls,
        features=FEATURES,
        numeric=NUMERIC,
        class_column="readmitted",
        out=out / "tree.txt",
        rpc_seconds=RPC_SECONDS,
    )
    return job, run_c45


def _kactus(fed: Federation, data: Dataset, out: Path) -> tuple[Any, Callable[[Any], Any]]:
    job = KactusLeaderJob(
        parties=fed.hops,
        tls=fed.leader_tls,
        options=KactusOptions(["age", "sex", "employment"], "readmitted", 20),
        out=out / "release.csv",
        rpc_seconds=RPC_SECONDS,
    )
    return job, run_kactus


def _evaluate(fed: Federation, data: Dataset, out: Path) -> tuple[Any, Callable[[Any], Any]]:
    release = centralized(data, data.spec(L=2, K=20, C="0.5")).table.astype(str)
    job = EvaluateLeaderJob(
        parties=fed.hops,
        tls=fed.leader_tls,
        release=release,
        taxonomy=data.taxonomy,
        out=out / "figures.json",
        rpc_seconds=RPC_SECONDS,
    )
    return job, run_evaluate


# (job, the leader's phase whose first message finds the party frozen, its label's start)
CASES = [
    pytest.param(_c45, "count queries, round 2", id="c45-count-middle"),
    pytest.param(_kactus, "kACTUS step ", id="kactus-step-middle"),
    pytest.param(_evaluate, "test of BE", id="evaluate-classify-middle"),
    pytest.param(_evaluate, "count queries, round 1", id="evaluate-count-middle"),
]


@pytest.mark.parametrize(("make", "phase"), CASES)
def test_a_frozen_party_in_a_classification_step_is_named_within_the_deadline(
    make: Callable[[Federation, Dataset, Path], tuple[Any, Callable[[Any], Any]]],
    phase: str,
    hospital_federation: Federation,
    hospital_data: Dataset,
    fault_of: Callable[[str, int], Fault],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fed = hospital_federation
    fault = fault_of("freeze", 1)
    job, run = make(fed, hospital_data, tmp_path)
    fan_out = Session.fan_out
    seen: list[str] = []

    def faulty(self: Session, name: str, call: Any, *rest: Any) -> Any:
        if name.startswith(phase) and fault.fired_at is None:
            seen.append(name)
            fault.fire()
        return fan_out(self, name, call, *rest)

    with monkeypatch.context() as patched:
        patched.setattr(Session, "fan_out", faulty)
        with pytest.raises(PartyFailure) as failure:
            run(job)
    failed_at = time.monotonic()
    assert fault.fired_at is not None and seen, "the job never reached the phase"
    message = str(failure.value)
    assert message.startswith(f"{seen[0]}: party {fault.name}:"), message
    assert "\n" not in message
    elapsed = failed_at - fault.fired_at
    limit = RPC_SECONDS + AFTER_DEADLINE_SECONDS + MARGIN_SECONDS
    assert elapsed < limit, f"{message!r} took {elapsed:.1f} s (limit {limit:.1f} s)"
    assert list(tmp_path.iterdir()) == [], "an output was written"

    fault.recover()
    assert len(party_processes(str(fed.workdir))) == len(fed.daemons)
    run(job)
    assert job.out.exists()
    assert all(status(fed, i).session_id == "" for i in range(len(fed.daemons)))
