"""A rerun without a party that dropped out is the next attempt of the same session (#28,
session 12), through real daemons over mutual TLS.

The survivors make no second handshake or key sharing (their ``Status`` counters say how many
they served: one of each), move to attempt 1 of the same session on the leader's ``Rerun``, and
the release passes the independent checker. A hostile or careless leader's ``Rerun`` (a stale
or skipped attempt, a roster with a stranger, reordered, without the party, too small) is
refused in one line before anything changes, and so is any message of another attempt; a
party whose policy does not allow exclusion refuses the switch whatever the leader knows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pandas as pd
import pytest

from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.federation.transport import make_channel
from fedanon.leader.kinds.lkc import run_lkc
from fedanon.leader.ring import open_ring
from fedanon.leader.session import Session
from fedanon.leader.sim import Federation, federation, split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from tests.distributed.conftest import (
    LEASE_SECONDS,
    Dataset,
    kill_when,
    make_job,
    read_release,
    run_distributed,
)
from tests.distributed.test_exclusion import (
    ALLOW,
    RERUN,
    VICTIM,
    KillTwo,
    _assert_lkc,
    _assert_survivors_release,
    _survivors,
    data,
    one_opted_out,
    opted_in,
)

__all__ = ["data", "one_opted_out", "opted_in"]  # the fixtures, shared


def _status(fed: Federation, name: str) -> pb.StatusReply:
    hop = next(h for h in fed.hops if h.name == name)
    channel = make_channel(hop.address, hop.name, fed.leader_tls)
    try:
        return pb_grpc.PartyStub(channel).Status(pb.StatusRequest(), timeout=30)
    finally:
        channel.close()


def test_a_rerun_is_the_next_attempt_of_the_session_without_a_second_handshake(
    opted_in: Federation, data: Dataset, tmp_path: Path
) -> None:
    """hospital-3 SIGKILLed after iteration 2: the survivors are moved to attempt 1 of the
    session they opened (the same id), and each served one OpenSession and one ShareKeys in
    all; the release of their records passes the LKC checker."""
    spec = data.spec(L=2, K=8, C="0.6")
    out = tmp_path / "out.csv"
    survivors = ["hospital-1", "hospital-2", "hospital-4"]
    killer = kill_when(opted_in, VICTIM, 2)
    seen: dict[str, pb.StatusReply] = {}
    opened: list[str] = []

    def on_phase(line: str) -> None:
        if line.startswith("specialize: secure sums") and not opened:
            opened.append(_status(opted_in, "hospital-1").session_id)
        if line.startswith("rerun: "):
            seen.update({name: _status(opted_in, name) for name in survivors})

    job = make_job(opted_in.hops, opted_in.leader_tls, data, spec, out, **RERUN)
    report = run_lkc(job, on_step=killer, on_phase=on_phase)
    assert killer.fired == [2] and report["excluded"] == ["hospital-3"]
    assert report["attempts"] == 2 and report["parties"] == survivors
    assert report["session_id"] == opened[0]
    assert sorted(seen) == survivors
    for name, status in seen.items():
        assert (status.session_id, status.attempt) == (opened[0], 1), name
    for name in survivors:
        status = _status(opted_in, name)
        assert (status.sessions_served, status.key_sharings) == (1, 1), name
    release = read_release(out)
    assert len(release) == len(_survivors(data, VICTIM))
    _assert_lkc(release, spec)


def _refused(call: object, request: object) -> str:
    with pytest.raises(grpc.RpcError) as refused:
        call(request, timeout=30)  # type: ignore[operator]
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    detail = refused.value.details() or ""
    assert "\n" not in detail
    return detail


def test_a_hostile_rerun_or_a_message_of_another_attempt_is_refused(
    opted_in: Federation, data: Dataset, tmp_path: Path
) -> None:
    spec = data.spec(L=2, K=8, C="0.6")
    job = make_job(opted_in.hops, opted_in.leader_tls, data, spec, tmp_path / "o.csv", **RERUN)
    schema = spec.schema(data.taxonomy)
    request = pb.OpenSessionRequest(lkc=lkc_job_to_proto(spec))
    with Session(job) as session:
        open_ring(session, spec.fingerprint_items(schema), request, "pairwise")
        stubs = dict(session.stubs)
        survivors = ["hospital-1", "hospital-2", "hospital-4"]

        def rerun(attempt: int, ring: list[str], excluded: list[str] | None = None) -> Any:
            gone = [n for n in session.ring if n not in ring] if excluded is None else excluded
            ref = pb.SessionRef(session_id=session.session_id, attempt=attempt)
            return pb.RekeyRerunRequest(ref=ref, ring=ring, excluded=gone)

        hostile = [
            (rerun(0, survivors), "attempt 0 is stale"),
            (rerun(2, survivors), "attempt 2 skips attempts"),
            (rerun(1, ["hospital-1", "hospital-2", "hospital-9"]), "hospital-9, who is not in"),
            (rerun(1, ["hospital-2", "hospital-1", "hospital-4"]), "not in the session's order"),
            (rerun(1, ["hospital-1", "hospital-2"]), "at least 3 parties"),
            (rerun(1, survivors, ["hospital-2"]), "not those its roster leaves out"),
        ]
        for message, reason in hostile:
            for name in [n for n in survivors if n in message.ring]:
                detail = _refused(stubs[name].Rerun, message)
                assert detail.startswith(f"party {name}: rerun (attempt ") and reason in detail
        left_out = _refused(stubs["hospital-3"].Rerun, rerun(1, survivors))
        assert "leaves this party out" in left_out
        # Nothing changed: the first attempt's iteration 0 is still answered ...
        for name in session.ring:
            assert stubs[name].Sum(pb.SumRequest(ref=session.ref(0)), timeout=30).pairwise_share
        # ... and the honest switch taken; from then on attempt 0 is stale, 2 ahead.
        for name in survivors:
            assert stubs[name].Rerun(rerun(1, survivors), timeout=30).party == name
            detail = _refused(stubs[name].Rerun, rerun(1, survivors))
            assert "attempt 1 is stale" in detail
        stale = pb.SumRequest(ref=session.ref(0))
        ahead = pb.SumRequest(ref=pb.SessionRef(session_id=session.session_id, attempt=2))
        for name in survivors:
            assert "attempt 0 is stale" in _refused(stubs[name].Sum, stale)
            assert "attempt 2 is ahead" in _refused(stubs[name].Sum, ahead)
            status = _status(opted_in, name)
            assert (status.attempt, status.iteration) == (1, 0)
        current = pb.SumRequest(ref=pb.SessionRef(session_id=session.session_id, attempt=1))
        for name in survivors:
            assert stubs[name].Sum(current, timeout=30).pairwise_share
        session.abort("test: done")


def test_a_party_that_did_not_opt_in_refuses_the_attempt_switch(
    one_opted_out: Federation, data: Dataset, tmp_path: Path
) -> None:
    """hospital-2 (allow_exclusion = false) refuses the leader's Rerun in one line; the
    parties that opted in accept it."""
    spec = data.spec(L=2, K=8, C="0.6")
    fed = one_opted_out
    job = make_job(fed.hops, fed.leader_tls, data, spec, tmp_path / "o.csv", **RERUN)
    schema = spec.schema(data.taxonomy)
    request = pb.OpenSessionRequest(lkc=lkc_job_to_proto(spec))
    survivors = ["hospital-1", "hospital-2", "hospital-4"]
    with Session(job) as session:
        open_ring(session, spec.fingerprint_items(schema), request, "pairwise")
        ref = pb.SessionRef(session_id=session.session_id, attempt=1)
        switch = pb.RekeyRerunRequest(ref=ref, ring=survivors, excluded=["hospital-3"])
        detail = _refused(session.stubs["hospital-2"].Rerun, switch)
        assert detail.startswith("party hospital-2: rerun (attempt 1) refused")
        assert "allow_exclusion = false" in detail
        assert session.stubs["hospital-1"].Rerun(switch, timeout=30).party == "hospital-1"
        session.abort("test: done")


def test_a_second_dropout_is_the_third_attempt_of_the_same_session(
    data: Dataset, tmp_path: Path
) -> None:
    """Five opted-in daemons: hospital-2 killed after iteration 1, hospital-4 after iteration
    2 of the rerun: attempts 0, 1 and 2 of one session; the three survivors served one
    handshake and one key sharing each, and their release passes the checker."""
    parts = split_table(data.table, 5, "random", seed=3)
    spec = data.spec(L=2, K=8, C="0.6")
    out = tmp_path / "out.csv"
    with federation(
        parts, data.taxonomy_path, lease_seconds=LEASE_SECONDS, policy=ALLOW, workdir=tmp_path
    ) as fed:
        killer = KillTwo(fed, 1, 3)
        report = run_distributed(fed.hops, fed.leader_tls, data, spec, out, killer, **RERUN)
        survivors = ["hospital-1", "hospital-3", "hospital-5"]
        assert killer.killed == [1, 2] and report["parties"] == survivors
        assert report["excluded"] == ["hospital-2", "hospital-4"] and report["attempts"] == 3
        for name in survivors:
            status = _status(fed, name)
            assert (status.sessions_served, status.key_sharings) == (1, 1), name
    kept = pd.concat([p for i, p in enumerate(parts) if i not in (1, 3)], ignore_index=True)
    _assert_survivors_release(out, report, kept, data, spec)
