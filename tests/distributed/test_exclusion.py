"""Rerun without a party that dropped out for good, only where every hospital opted in (#28).

Real daemons over mutual TLS; one is SIGKILLed after an iteration's secure sum, so the next sum
is the first message that meets it. With every party's ``[policy] allow_exclusion = true`` the
job reruns among the survivors with fresh keys, from the longest prefix of the completed
specializations whose cut is valid for them: the release passes the independent LKC checker on
their pooled table (and is its centralized release where the rerun resumed from the root). Without
every party's consent the job fails in one line, as before, and writes nothing; a party that did
not opt in refuses a rerun whatever the leader does.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pandas as pd
import pytest

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.engine import LKCEngine, StepInfo
from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.algorithms.tds.layout import Specialization
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.algorithms.tds.prefix import replayed
from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.leader.exclusion import Attempt
from fedanon.leader.federation import PartyFailure
from fedanon.leader.kinds.lkc import run_lkc
from fedanon.leader.ring import open_ring
from fedanon.leader.session import Session
from fedanon.leader.sim import Federation, federation, split_table
from fedanon.models.lkc import check_lkc
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.distributed.conftest import (
    LEASE_SECONDS,
    Dataset,
    assert_same_release,
    centralized,
    hospital_dataset,
    kill_when,
    load_dataset,
    make_job,
    read_release,
    run_distributed,
)

PARTIES = 4
VICTIM = 2  # hospital-3: its predecessor's configured next hop is gone, so no ring survives
LATE = 14  # a late dropout: after iteration 14 of the job's 18
RERUN = {"sum_mode": "pairwise", "union_mode": "shuffle"}
ALLOW = "allow_exclusion = true"


@pytest.fixture(scope="module")
def data() -> Dataset:
    return hospital_dataset(1600, seed=11)


def _parts(data: Dataset, count: int = PARTIES) -> list[pd.DataFrame]:
    return split_table(data.table, count, "random", seed=3)


@pytest.fixture
def opted_in(data: Dataset, tmp_path: Path) -> Iterator[Federation]:
    with federation(
        _parts(data),
        data.taxonomy_path,
        lease_seconds=LEASE_SECONDS,
        policy=ALLOW,
        workdir=tmp_path / "fed",
    ) as fed:
        yield fed


@pytest.fixture
def one_opted_out(data: Dataset, tmp_path: Path) -> Iterator[Federation]:
    policies: list[str | None] = [ALLOW] * PARTIES
    policies[1] = "allow_exclusion = false"
    with federation(
        _parts(data),
        data.taxonomy_path,
        lease_seconds=LEASE_SECONDS,
        policy=policies,
        workdir=tmp_path / "fed",
    ) as fed:
        yield fed


def test_a_party_killed_for_good_late_is_excluded_and_the_rerun_resumes_from_its_cut(
    opted_in: Federation, data: Dataset, tmp_path: Path
) -> None:
    """Every party opted in: hospital-3 killed late, after iteration LATE of the job's 18.
    The rerun among the other three resumes at iteration LATE (that cut is valid for them:
    3/4 of a random split, groups far above K), keeps the first attempt's specializations,
    and its release of their records passes the LKC checker; the report names the excluded
    party and the resumed iteration."""
    spec = data.spec(L=2, K=8, C="0.6")
    reference = centralized(data, spec)  # what the first attempt specializes, all four pooled
    assert len(reference.report["specialization_sequence"]) == 18
    out = tmp_path / "out.csv"
    killer = kill_when(opted_in, VICTIM, LATE)
    lines: list[str] = []
    job = make_job(opted_in.hops, opted_in.leader_tls, data, spec, out, **RERUN)
    report = run_lkc(job, on_step=killer, on_phase=lines.append)
    assert killer.fired == [LATE]
    assert report["excluded"] == ["hospital-3"]
    assert report["attempts"] == 2
    assert (
        report["resumed_from"] == LATE == _longest_valid(data, _survivors(data, VICTIM), spec, LATE)
    )
    assert any(f"resuming at iteration {LATE} of the {LATE} completed" in x for x in lines)
    assert report["parties"] == ["hospital-1", "hospital-2", "hospital-4"]
    kept = report["specialization_sequence"][:LATE]
    assert kept == reference.report["specialization_sequence"][:LATE]
    survivors = _survivors(data, VICTIM)
    release = read_release(out)
    assert len(release) == len(survivors) < len(data.table)
    _assert_lkc(release, spec)


def test_a_party_frozen_late_is_excluded_by_the_deadline_and_the_rerun_resumes(
    opted_in: Federation, data: Dataset, tmp_path: Path
) -> None:
    """A frozen hospital (SIGSTOP), not a dead one, after iteration LATE: the next sum ends
    at its deadline, the Status probe gets no answer and names it, and the rerun among the
    others probes and adopts its prefix and finishes; a release passing the checker, within
    the deadlines (the sum's, the probe's) and not the frozen party's whim."""
    spec = data.spec(L=2, K=8, C="0.6")
    out = tmp_path / "out.csv"
    freezer = kill_when(opted_in, VICTIM, LATE, signal.SIGSTOP)
    job = make_job(opted_in.hops, opted_in.leader_tls, data, spec, out, rpc_seconds=5.0, **RERUN)
    began = time.monotonic()
    frozen = opted_in.daemons[VICTIM].process
    assert frozen is not None
    try:
        report = run_lkc(job, on_step=freezer)
    finally:
        frozen.send_signal(signal.SIGCONT)  # its teardown then stops it at once
    assert time.monotonic() - began < 5.0 + 5.0 + 60.0  # the sum, the probe, a loaded machine
    assert freezer.fired == [LATE]
    assert report["excluded"] == ["hospital-3"] and report["resumed_from"] == LATE
    release = read_release(out)
    assert len(release) == len(_survivors(data, VICTIM))
    _assert_lkc(release, spec)


def test_survivors_that_make_the_last_cut_invalid_resume_from_a_shorter_prefix(
    data: Dataset, tmp_path: Path
) -> None:
    """The victim holds all but 3 of the records of one group (over two QIDs, L = 2) of the
    cut after iteration LATE: without it that group has 3 < K records, so the cut is invalid
    for the survivors and the rerun resumes from a shorter prefix; the release passes the
    checker on their records."""
    spec = data.spec(L=2, K=8, C="0.6")
    at_late = _generalized_at(data, spec, LATE)
    qids = list(spec.qids)
    groups = at_late.groupby(qids[:2]).indices
    group = [
        int(r) for r in next(rows for rows in groups.values() if len(rows) >= spec.params.K + 3)
    ]
    others = sorted(set(range(len(data.table))) - set(group))
    shuffled = pd.Series(others).sample(frac=1, random_state=4).tolist()
    parts_rows = [shuffled[i :: PARTIES - 1] for i in range(PARTIES - 1)]
    victim_rows = sorted(group[3:] + parts_rows[0][: len(parts_rows[0]) // 4])
    keep = [r for r in parts_rows[0] if r not in set(victim_rows)] + group[:3]
    rows_of = [keep, parts_rows[1], victim_rows, parts_rows[2]]  # victim at VICTIM
    parts = [data.table.iloc[sorted(r)].reset_index(drop=True) for r in rows_of]
    out = tmp_path / "out.csv"
    with federation(
        parts,
        data.taxonomy_path,
        lease_seconds=LEASE_SECONDS,
        policy=ALLOW,
        workdir=tmp_path / "fed",
    ) as fed:
        killer = kill_when(fed, VICTIM, LATE)
        report = run_distributed(fed.hops, fed.leader_tls, data, spec, out, on_step=killer, **RERUN)
    assert killer.fired == [LATE]
    assert report["excluded"] == ["hospital-3"]
    assert report["resumed_from"] < LATE
    assert report["resumed_from"] == _longest_valid(data, _joined(parts), spec, LATE)
    _assert_survivors_release(out, report, _joined(parts), data, spec)


def _assert_survivors_release(
    out: Path, report: dict, survivors: pd.DataFrame, data: Dataset, spec: LKCJobSpec
) -> None:
    """The rerun released the survivors' records and the checker passes them; resumed from
    the root, the release is the centralized one of their pooled table."""
    release = read_release(out)
    assert len(release) == len(survivors)
    _assert_lkc(release, spec)
    if report["resumed_from"] == 0:
        reference = centralized(load_dataset(survivors, data.taxonomy_path, data.drop), spec)
        assert_same_release(out, report, reference)


def _survivors(data: Dataset, victim: int) -> pd.DataFrame:
    return _joined(_parts(data), victim)


def _joined(parts: list[pd.DataFrame], victim: int = VICTIM) -> pd.DataFrame:
    return pd.concat([p for i, p in enumerate(parts) if i != victim], ignore_index=True)


def _longest_valid(data: Dataset, survivors: pd.DataFrame, spec: LKCJobSpec, limit: int) -> int:
    """The most of the pooled run's first `limit` specializations after which the checker
    passes the survivors' records generalized at the cut they reach."""
    schema = build_schema(data.taxonomy, data.table, spec.qids, spec.sensitive, spec.class_column)
    pooled = LocalParty(schema, data.table)
    steps: list[Specialization] = []
    specialize = pooled.specialize

    def record(step: Specialization) -> Any:
        steps.append(step)
        return specialize(step)

    pooled.specialize = record  # type: ignore[method-assign]
    LKCEngine(schema, spec.params, score=spec.score).run(pooled)
    sensitive: dict[str, list[str]] = {}
    for s in spec.sensitive:
        sensitive.setdefault(s.column, []).append(s.value)
    best = 0
    for k in range(limit + 1):
        party = LocalParty(schema, survivors)
        replayed(party, schema, steps[:k])  # the pooled masks: a survivor's record lies in one
        table = party.generalized_table().astype(str)
        params = spec.params
        if check_lkc(table, spec.qids, sensitive, params.L, params.K, params.C).ok:
            best = k
    return best


class _Enough(Exception):
    """Stops the reference run after the iterations a test needs."""


def _generalized_at(data: Dataset, spec: LKCJobSpec, iterations: int) -> pd.DataFrame:
    """The whole table generalized at the cut the centralized run reaches after
    `iterations` specializations (the first attempt's cut there: its history is the
    centralized one of the pooled table)."""
    schema = build_schema(data.taxonomy, data.table, spec.qids, spec.sensitive, spec.class_column)
    party = LocalParty(schema, data.table)

    def stop(step: StepInfo) -> None:
        if step.iteration == iterations:
            raise _Enough

    with pytest.raises(_Enough):
        LKCEngine(schema, spec.params, score=spec.score, on_step=stop).run(party)
    return party.generalized_table().astype(str)


def _assert_lkc(release: pd.DataFrame, spec: LKCJobSpec) -> None:
    """The independent checker (``fedanon check lkc``'s) passes the release."""
    sensitive: dict[str, list[str]] = {}
    for s in spec.sensitive:
        sensitive.setdefault(s.column, []).append(s.value)
    params = spec.params
    verdict = check_lkc(release, spec.qids, sensitive, params.L, params.K, params.C)
    assert verdict.ok, verdict.worst


@pytest.mark.slow
def test_a_party_killed_during_the_shuffle_union_is_excluded_too(
    opted_in: Federation, data: Dataset, tmp_path: Path
) -> None:
    """The rerun does not depend on the phase: hospital-2 killed as the union's second shuffle
    step starts; the rerun resumes from the whole completed history (its cut is valid for the
    other three) and their release passes the checker."""
    spec = data.spec(L=2, K=8, C="0.6")
    out = tmp_path / "out.csv"
    killed: list[str] = []

    def on_phase(line: str) -> None:
        if not killed and line.startswith("union: shuffle step 2/"):
            killed.append(line)
            opted_in.stop(opted_in.daemons[1], signal.SIGKILL)

    job = make_job(opted_in.hops, opted_in.leader_tls, data, spec, out, **RERUN)
    report = run_lkc(job, on_phase=on_phase)
    assert killed and report["excluded"] == ["hospital-2"]
    completed = len(centralized(data, spec).report["specialization_sequence"])
    assert report["resumed_from"] == _longest_valid(data, _survivors(data, 1), spec, completed)
    _assert_survivors_release(out, report, _survivors(data, 1), data, spec)


def test_without_every_partys_consent_the_job_fails_in_one_line(
    one_opted_out: Federation, data: Dataset, tmp_path: Path
) -> None:
    """hospital-2 did not opt in: the killed party fails the job as before, naming it and the
    phase, and nothing is written."""
    spec = data.spec(L=2, K=8, C="0.6")
    out = tmp_path / "out.csv"
    with pytest.raises(PartyFailure) as failure:
        run_distributed(
            one_opted_out.hops,
            one_opted_out.leader_tls,
            data,
            spec,
            out,
            on_step=kill_when(one_opted_out, VICTIM, 2),
            **RERUN,
        )
    message = str(failure.value)
    assert "\n" not in message
    assert "hospital-3" in message and "iteration 3" in message
    assert not out.exists()


def test_a_party_that_did_not_opt_in_refuses_a_rerun(
    one_opted_out: Federation, data: Dataset, tmp_path: Path
) -> None:
    """The party enforces its own policy: the leader's switch to a rerun's attempt (its
    ``Rerun``) is refused by hospital-2 (allow_exclusion = false) whatever the leader knows."""
    spec = data.spec(L=2, K=8, C="0.6")
    job = make_job(
        one_opted_out.hops, one_opted_out.leader_tls, data, spec, tmp_path / "o.csv", **RERUN
    )
    request = pb.OpenSessionRequest(lkc=lkc_job_to_proto(spec))
    schema = spec.schema(data.taxonomy)
    with (
        Session(job) as session,
        pytest.raises(
            PartyFailure,
            match=r"party hospital-2: rerun \(attempt 1\) refused: .*allow_exclusion = false",
        ),
    ):
        open_ring(session, spec.fingerprint_items(schema), request, "pairwise")
        _rerun_without(session, one_opted_out, "hospital-3")


def _rerun_without(session: Session, fed: Federation, gone: str) -> None:
    """Move the open session to its second attempt, without `gone`, as the leader does
    (leader/exclusion.py's ``Attempt.switch``: every survivor must accept the ``Rerun``)."""
    Attempt([hop for hop in fed.hops if hop.name != gone], [gone], 2, True).switch(session)


class KillTwo:
    """Kill daemon #`first` after iteration 1 of the first attempt and #`second` after
    iteration 2 of the rerun (the first attempt never reaches its iteration 2's step)."""

    def __init__(self, fed: Federation, first: int, second: int) -> None:
        self.fed, self.victims = fed, [first, second]
        self.killed: list[int] = []

    def __call__(self, step: StepInfo) -> None:
        if len(self.killed) < 2 and step.iteration == len(self.killed) + 1:
            victim = self.victims[len(self.killed)]
            self.fed.stop(self.fed.daemons[victim], signal.SIGKILL)
            self.killed.append(step.iteration)


@pytest.mark.slow
def test_twenty_parties_two_killed_for_good_finish_among_eighteen(tmp_path: Path) -> None:
    """20 daemons, all opted in, sparse pairwise masks (10 partners each of 19, then of 18);
    hospital-5 killed after iteration 1, hospital-14 after iteration 2 of the rerun: three
    attempts; the release of the 18 survivors' pooled records passes the LKC checker (and is
    their centralized one where the last rerun resumed from the root)."""
    count = 20
    data = hospital_dataset(2400, seed=7)
    parts = split_table(data.table, count, "random", seed=5)
    spec = data.spec(L=2, K=8, C="0.6")
    out = tmp_path / "out.csv"
    with federation(
        parts,
        data.taxonomy_path,
        lease_seconds=30.0,
        policy=ALLOW,
        workdir=tmp_path / "fed",
    ) as fed:
        killer = KillTwo(fed, 4, 13)
        report = run_distributed(
            fed.hops,
            fed.leader_tls,
            data,
            spec,
            out,
            on_step=killer,
            rpc_seconds=120.0,
            sum_mode="sparse",
            union_mode="shuffle",
        )
    assert killer.killed == [1, 2]
    assert report["excluded"] == ["hospital-5", "hospital-14"]
    assert report["attempts"] == 3
    survivors = pd.concat([p for i, p in enumerate(parts) if i not in (4, 13)], ignore_index=True)
    _assert_survivors_release(out, report, survivors, data, spec)


def test_a_rerun_session_forwards_nothing_to_a_next_hop(
    opted_in: Federation, data: Dataset, tmp_path: Path
) -> None:
    """Opted-in parties accept a rerun's attempt without a party (their configured next hops
    no longer match its roster), and then refuse the layered union's STRIP (sent by the leader
    to the first party), which would forward to a next hop that may be the excluded party."""
    spec = data.spec(L=2, K=8, C="0.6")
    job = make_job(opted_in.hops, opted_in.leader_tls, data, spec, tmp_path / "o.csv", **RERUN)
    request = pb.OpenSessionRequest(lkc=lkc_job_to_proto(spec))
    schema = spec.schema(data.taxonomy)
    with Session(job) as session:
        opened = open_ring(session, spec.fingerprint_items(schema), request, "pairwise")
        assert all(reply.allow_exclusion for reply in opened.replies.values())
        _rerun_without(session, opted_in, "hospital-3")
        strip = pb.UnionRequest(
            ref=session.ref(0), phase=pb.UNION_PHASE_STRIP, packed=b"x" * 64, item_size=64
        )
        with pytest.raises(grpc.RpcError) as refused:
            session.stubs["hospital-1"].Union(strip, timeout=30)
        assert "no ring to strip around" in (refused.value.details() or "")


def _refusal(session: Session, request: pb.SumRequest) -> str:
    """Every party's refusal of `request`: one line naming the party, the same text."""
    details = set()
    for name in session.ring:
        with pytest.raises(grpc.RpcError) as refused:
            session.stubs[name].Sum(request, timeout=30)
        detail = refused.value.details() or ""
        assert detail.startswith(f"party {name}: ") and "\n" not in detail
        details.add(detail.removeprefix(f"party {name}: "))
    assert len(details) == 1
    return details.pop()


def test_a_prefix_is_refused_outside_a_rerun_and_out_of_its_place(
    opted_in: Federation, data: Dataset, tmp_path: Path
) -> None:
    """A probe or an adoption outside a rerun (attempt 0: no ``Rerun``), an adoption at a rerun's
    iteration 0 or one that no probe preceded, and a probe at iteration 1: each refused with
    one line before any work (the session stays where it was: its iteration 0 still
    answers)."""
    spec = data.spec(L=2, K=8, C="0.6")
    job = make_job(opted_in.hops, opted_in.leader_tls, data, spec, tmp_path / "o.csv", **RERUN)
    schema = spec.schema(data.taxonomy)
    probe = pb.PrefixProbe(instructions=[pb.Instruction(attr=0, node=0)])
    adopt = pb.PrefixAdopt()
    request = pb.OpenSessionRequest(lkc=lkc_job_to_proto(spec))
    with Session(job) as session:
        open_ring(session, spec.fingerprint_items(schema), request, "pairwise")
        for prefix in ({"prefix_probe": probe}, {"prefix_adopt": adopt}):
            refused = _refusal(session, pb.SumRequest(ref=session.ref(0), **prefix))
            assert "only in a rerun's attempt" in refused
        _rerun_without(session, opted_in, "hospital-3")
        refused = _refusal(session, pb.SumRequest(ref=session.ref(0), prefix_adopt=adopt))
        assert "adoption comes alone, at iteration 1 after a probe" in refused
        both = pb.SumRequest(ref=session.ref(0), prefix_probe=probe, prefix_adopt=adopt)
        assert "probe comes alone, at iteration 0" in _refusal(session, both)
        # iteration 0 is still unanswered: a plain start is taken, then a late probe refused
        for name in session.ring:
            session.stubs[name].Sum(pb.SumRequest(ref=session.ref(0)), timeout=30)
        late = pb.SumRequest(ref=session.ref(1), prefix_probe=probe)
        assert "probe comes alone, at iteration 0" in _refusal(session, late)
        unprobed = pb.SumRequest(ref=session.ref(1), prefix_adopt=adopt)
        assert "after a probe" in _refusal(session, unprobed)


@pytest.mark.slow
def test_a_survivor_restarted_in_a_resumed_rerun_rejoins_it(
    opted_in: Federation, data: Dataset, tmp_path: Path
) -> None:
    """hospital-3 killed for good after iteration LATE (excluded once the rejoin bound passed);
    the rerun resumes at LATE; hospital-1 is killed and restarted two specializations later
    and rejoins the rerun (its ``Rejoin`` carries the probe and the adoption, which it replays
    before the instructions); the release passes the checker on the survivors' records."""
    spec = data.spec(L=2, K=8, C="0.6")
    out = tmp_path / "out.csv"
    gone = kill_when(opted_in, VICTIM, LATE)
    restarted: list[int] = []

    def on_step(step: StepInfo) -> None:
        gone(step)
        if gone.fired and not restarted and step.iteration >= LATE + 2 > gone.fired[0]:
            restarted.append(step.iteration)
            opted_in.stop(opted_in.daemons[0], signal.SIGKILL)
            opted_in.start(opted_in.daemons[0])

    report = run_distributed(
        opted_in.hops,
        opted_in.leader_tls,
        data,
        spec,
        out,
        on_step=on_step,
        rejoin_seconds=20.0,
        **RERUN,
    )
    assert restarted == [LATE + 2]
    assert report["excluded"] == ["hospital-3"] and report["resumed_from"] == LATE
    assert [entry["party"] for entry in report["rejoined"]] == ["hospital-1"]
    _assert_survivors_release(out, report, _survivors(data, VICTIM), data, spec)


def test_a_rerun_under_a_suppression_budget_resumes_within_the_survivors_budget(
    opted_in: Federation, data: Dataset, tmp_path: Path
) -> None:
    """k-anonymity with a 5 % suppression budget: hospital-3 killed after the next-to-last
    specialization; the rerun resumes from a prefix, and the survivors' release suppresses
    at most 5 % of their records and passes the checker with that budget."""
    spec = data.spec(
        L=None,
        K=10,
        C=None,
        preset="k-anonymity",
        qids=["age", "sex", "postcode", "employment"],
        suppress="0.05",
        score="discernibility",
    )
    steps = len(centralized(data, spec).report["specialization_sequence"])
    assert steps >= 4
    out = tmp_path / "out.csv"
    killer = kill_when(opted_in, VICTIM, steps - 1)
    report = run_distributed(
        opted_in.hops, opted_in.leader_tls, data, spec, out, on_step=killer, **RERUN
    )
    assert killer.fired == [steps - 1] and report["excluded"] == ["hospital-3"]
    assert report["resumed_from"] > 0
    survivors = _survivors(data, VICTIM)
    release = read_release(out)
    assert len(release) == len(survivors)
    suppressed = report["suppression"]["suppressed_records"]
    assert suppressed <= report["suppression"]["budget_records"] == len(survivors) // 20
    roots = {t.attribute: t.labels[t.root] for t in spec.schema(data.taxonomy).taxonomies}
    verdict = check_lkc(
        release,
        spec.qids,
        {},
        spec.params.L,
        spec.params.K,
        spec.params.C,
        suppressed=roots,
        max_suppressed=len(survivors) // 20,
    )
    assert verdict.ok, verdict.worst
