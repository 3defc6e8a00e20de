"""No rerun, said when it is decided (#28, review of leader/exclusion.py), with real daemons
over mutual TLS: a party that did not opt in makes another party's dropout fail the job in one
line naming the gone party and the party whose policy forbids the rerun; a job whose sum
forwards along the ring says at its handshake that no rerun can follow, though every party
opted in, and a dropout then fails it in one line with why."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedanon.leader.federation import PartyFailure
from fedanon.leader.kinds.lkc import run_lkc
from fedanon.leader.sim import Federation
from tests.distributed.conftest import Dataset, kill_when, make_job
from tests.distributed.test_exclusion import (  # noqa: F401 (fixtures)
    RERUN,
    VICTIM,
    data,
    one_opted_out,
    opted_in,
)


def _fails(fed: Federation, dataset: Dataset, out: Path, lines: list[str], **options: str) -> str:
    spec = dataset.spec(L=2, K=8, C="0.6")
    job = make_job(fed.hops, fed.leader_tls, dataset, spec, out, **options)
    killer = kill_when(fed, VICTIM, 2)
    with pytest.raises(PartyFailure) as failure:
        run_lkc(job, on_step=killer, on_phase=lines.append)
    assert killer.fired == [2]
    message = str(failure.value)
    assert "\n" not in message and "hospital-3" in message and "iteration 3" in message
    assert not out.exists()
    return message


def test_a_dropout_names_the_party_whose_policy_forbids_the_rerun(
    one_opted_out: Federation,  # noqa: F811
    data: Dataset,  # noqa: F811
    tmp_path: Path,
) -> None:
    message = _fails(one_opted_out, data, tmp_path / "out.csv", [], **RERUN)
    assert "no rerun without hospital-3: the policy of hospital-2" in message, message


def test_a_ring_sum_job_says_at_its_handshake_that_no_rerun_can_follow(
    opted_in: Federation,  # noqa: F811
    data: Dataset,  # noqa: F811
    tmp_path: Path,
) -> None:
    lines: list[str] = []
    message = _fails(opted_in, data, tmp_path / "out.csv", lines, sum_mode="ring")
    said = [i for i, line in enumerate(lines) if "no rerun for this job" in line]
    started = [i for i, line in enumerate(lines) if line.startswith("specialize")]
    assert len(said) == 1 and said[0] < started[0], lines
    assert 'sum_mode = "pairwise"' in lines[said[0]]
    assert "no rerun without hospital-3" in message and "sum_mode" in message, message
