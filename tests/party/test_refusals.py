"""Stale, replayed and early messages of the job kinds' own stateful RPCs (issue #22, defect 5),
through the real servicer's dispatch: each is refused (``FAILED_PRECONDITION``, one log line)
and changes nothing ``Status`` reports; the genuine message is still served afterwards."""

from __future__ import annotations

import logging

import grpc
import numpy as np
import pandas as pd
import pytest

from fedanon.party.servicer import PartyServicer
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.party.fakes import Aborted, Context, party_config

RING = ["hospital-a", "hospital-b"]
SESSION = "5e" * 16


def _servicer(table: pd.DataFrame) -> PartyServicer:
    return PartyServicer(party_config(), table, None, None, None, None)


def _state(servicer: PartyServicer) -> pb.StatusReply:
    """The party's Status without the lease left, which runs down by itself (and a message
    from the session's leader, refused or not, renews it: the leader is alive)."""
    status = servicer.Status(pb.StatusRequest(), Context())
    status.ClearField("lease_left_seconds")
    return status


def _refused(
    servicer: PartyServicer,
    method: str,
    request: object,
    caplog: pytest.LogCaptureFixture,
    needle: str,
) -> None:
    before = _state(servicer)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="fedanon"), pytest.raises(Aborted) as aborted:
        getattr(servicer, method)(request, Context())
    code, message = aborted.value.args
    assert code == grpc.StatusCode.FAILED_PRECONDITION and needle in message, message
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [message]
    assert _state(servicer) == before


@pytest.fixture
def drbt_party() -> PartyServicer:
    rng = np.random.default_rng(3)
    table = pd.DataFrame(
        {
            "id": [f"o{i}" for i in range(20)],
            **{name: rng.normal(size=20).round(3) for name in ("x", "y", "z")},
        }
    )
    servicer = _servicer(table)
    servicer.OpenSession(
        pb.OpenSessionRequest(
            ref=pb.SessionRef(session_id=SESSION),
            drbt=pb.DRBTJob(id_column="id", matrix="gaussian"),
            ring=RING,
        ),
        Context(),
    )
    return servicer


def test_drbt_project_before_the_ids_and_twice_is_refused(
    drbt_party: PartyServicer, caplog: pytest.LogCaptureFixture
) -> None:
    ref = pb.SessionRef(session_id=SESSION)
    project = pb.ProjectRequest(ref=ref)
    _refused(drbt_party, "Project", project, caplog, "no complete common id list")
    ids = pb.IdsRequest(ref=ref, ids=[f"o{i}" for i in range(20)])
    assert drbt_party.Ids(ids, Context()).missing == 0
    assert drbt_party.Project(project, Context()).block.rows == 20
    _refused(drbt_party, "Project", project, caplog, "already projected")


@pytest.fixture
def randomize_party() -> PartyServicer:
    table = pd.DataFrame({"sex": ["F", "M"] * 10, "stay": [str(i % 4) for i in range(20)]})
    servicer = _servicer(table)
    servicer.OpenSession(
        pb.OpenSessionRequest(
            ref=pb.SessionRef(session_id=SESSION),
            randomize=pb.RandomizeJob(
                qids=[pb.QIDDomain(column="sex", values=["F", "M"])],
                method="ra",
                p="uniform",
                keep_at_parties=True,
            ),
            ring=RING,
            sum_mode=pb.SUM_MODE_PAIRWISE,
        ),
        Context(),
    )
    return servicer


def test_randomize_out_of_order_or_stale_is_refused(
    randomize_party: PartyServicer, caplog: pytest.LogCaptureFixture
) -> None:
    """Randomize comes at iteration 1, after the histogram sum: one for iteration 1 before the
    sum, or for iteration 0, is not the session's next message."""
    marginals = pb.Vector(data=np.array([10, 10], dtype="<u8").tobytes(), length=2, dtype="<u8")
    for iteration, needle in (
        (1, "randomize comes once, after the histogram sum"),
        (0, "stale or out-of-order iteration 0"),
        (2, "stale or out-of-order iteration 2"),
    ):
        request = pb.RandomizeRequest(
            ref=pb.SessionRef(session_id=SESSION, iteration=iteration), marginals=marginals
        )
        _refused(randomize_party, "Randomize", request, caplog, needle)
    # The pairwise sum before ShareKeys is early too: refused, nothing recorded.
    early = pb.SumRequest(ref=pb.SessionRef(session_id=SESSION))
    _refused(randomize_party, "Sum", early, caplog, "pairwise keys were not shared")
