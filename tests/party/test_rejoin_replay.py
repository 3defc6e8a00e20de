"""Rejoin by replay at the party (#28, party/rejoin.py): the replayed log must be the one the
party answered before its restart, or a deviating leader could ask the same iteration again
with another instruction and read the difference of the two answers (the pairwise masks of an
iteration are the same both times: crypto/pairwise.py masks a round once)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.algorithms.tds.layout import (
    CarriedMasks,
    DynamicSplit,
    Specialization,
    restored,
)
from fedanon.federation.wire import to_instruction
from fedanon.leader.kinds.lkc import spec_from_table
from fedanon.party.errors import NotExpected, ProtocolError
from fedanon.party.handlers.lkc_session import LKCSession
from fedanon.party.sums import RingSum
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy

SESSION = "ab" * 16


class Recorder:
    """The engine's count source over one party's session: records every instruction and
    answer (the carried entries), and hands the engine the full statistics as the leader
    restores them."""

    def __init__(self, session: LKCSession) -> None:
        self.session = session
        self.instructions: list[pb.Instruction] = []
        self.answers: list[np.ndarray] = []
        self.masks = CarriedMasks(session.local.layout, session.schema)

    def start(self, splits: Sequence[DynamicSplit]) -> np.ndarray:
        self.answers.append(self.session.contribution(sum_request(0)))
        return restored(self.answers[-1], self.masks.start())

    def specialize(self, step: Specialization) -> np.ndarray:
        self.instructions.append(to_instruction(step))
        request = sum_request(len(self.instructions), self.instructions[-1])
        self.answers.append(self.session.contribution(request))
        return restored(self.answers[-1], self.masks.specialize(step))

    def atom_histogram(self, attr: int, node: int) -> np.ndarray:
        raise AssertionError("no dynamic splits")


def sum_request(
    iteration: int, instruction: pb.Instruction | None = None, attempt: int = 0
) -> pb.SumRequest:
    ref = pb.SessionRef(session_id=SESSION, iteration=iteration, attempt=attempt)
    request = pb.SumRequest(ref=ref)
    if instruction is not None:
        request.instruction.CopyFrom(instruction)
    return request


@pytest.fixture(scope="module")
def job() -> tuple[pd.DataFrame, LKCJobSpec, object]:
    table = generate_hospital(400, seed=3).astype(str)
    taxonomy = load_taxonomy(hospital_taxonomy_path())
    spec = spec_from_table({"L": 2, "K": 5, "C": "0.9", "drop": ["patient_id"]}, taxonomy, "t")
    return table, spec, spec.schema(taxonomy)


def session(job: tuple) -> LKCSession:
    table, spec, schema = job
    return LKCSession(SESSION, spec, schema, table, ["a", "b", "c"], "a", pb.SUM_MODE_PAIRWISE)


def instructions(job: tuple, score: str) -> tuple[list[pb.Instruction], list[tuple[int, bytes]]]:
    """The whole specialization with `score`, and what the party sealed after each answer."""
    log, sealed, _answers = specialization(job, score)
    return log, sealed


def specialization(
    job: tuple, score: str
) -> tuple[list[pb.Instruction], list[tuple[int, bytes]], list[np.ndarray]]:
    """The instructions, what was sealed after each answer, and the answers."""
    party = session(job)
    sealed: list[tuple[int, bytes]] = []
    party.on_applied = lambda count, chain: sealed.append((count, chain))
    _table, spec, schema = job
    recorder = Recorder(party)
    LKCEngine(schema, spec.params, score=score).run(recorder)
    return recorder.instructions, sealed, recorder.answers


def test_an_honest_log_replays_to_the_same_state_and_answers(job: tuple) -> None:
    log, sealed, answers = specialization(job, "infogain")
    assert len(log) >= 3 and sealed[-1][0] == len(log) + 1
    for cut in (1, len(log) // 2, len(log)):
        count, chain = sealed[cut]  # answered iterations 0..cut: count cut + 1
        again = session(job)
        again.replay(log[: cut - 1], (count, chain))  # the leader resumes at `cut`
        reply = again.contribution(sum_request(cut, log[cut - 1]))  # the same answer again
        assert np.array_equal(reply, answers[cut])
        assert again.chain == chain and again.next_iteration == count
        resumed = session(job)  # had not answered `cut` before the restart: resumes after it
        resumed.replay(log[:cut], sealed[cut - 1])
        assert resumed.chain == chain


def test_a_different_instruction_for_an_answered_iteration_is_refused(job: tuple) -> None:
    """The party answered iteration 1 with infogain's first step; after its restart the
    leader asks iteration 1 with another step (discernibility's): refused, nothing answered."""
    ours, sealed = instructions(job, "infogain")
    theirs, _ = instructions(job, "discernibility")
    assert ours[0] != theirs[0], "the two scores must choose differently for this test"
    restarted = session(job)
    restarted.replay([], sealed[1])  # answered 0 and 1; the leader resumes at 1
    with pytest.raises(ProtocolError, match="differs from the one this party answered"):
        restarted.contribution(sum_request(1, theirs[0]))
    with pytest.raises(Exception, match="ended"):
        restarted.contribution(sum_request(2, ours[1]))
    replayed = session(job)
    with pytest.raises(ProtocolError, match="differ from those this party answered"):
        replayed.replay([theirs[0]], sealed[1])  # the leader resumes at 2 with a forged log


def test_a_log_shorter_than_the_answers_is_refused(job: tuple) -> None:
    log, sealed = instructions(job, "infogain")
    with pytest.raises(ProtocolError, match="answered 4 iterations"):
        session(job).replay(log[:1], sealed[3])  # answered 0..3, the leader resumes at 2


def test_a_table_changed_since_the_answers_is_refused(job: tuple) -> None:
    """The hospital replaced its table while the daemon was down: the replayed answers differ
    from those it gave, so it refuses to rejoin rather than answer with other counts."""
    log, sealed = instructions(job, "infogain")
    table, spec, schema = job
    changed = table.iloc[40:].reset_index(drop=True)  # forty records fewer
    party = LKCSession(SESSION, spec, schema, changed, ["a", "b", "c"], "a", pb.SUM_MODE_PAIRWISE)
    with pytest.raises(ProtocolError, match="or its table changed"):
        party.replay(log[:2], sealed[2])


def test_a_ring_hop_forwards_a_resent_sum_with_the_vector_it_answered(job: tuple) -> None:
    """After a party further down the ring rejoined, the leader resends the interrupted sum: a
    hop that had applied it forwards the same vector without applying its instruction again;
    the same iteration with another instruction reaches the session, which refuses it."""
    ours, _ = instructions(job, "infogain")
    theirs, _ = instructions(job, "discernibility")
    party, ring = session(job), RingSum()
    first = ring._local(party, sum_request(0))
    assert ring._local(party, sum_request(0)) is first and party.next_iteration == 1
    answer = ring._local(party, sum_request(1, ours[0]))
    assert ring._local(party, sum_request(1, ours[0])) is answer and party.next_iteration == 2
    with pytest.raises(NotExpected, match="stale or out-of-order"):
        ring._local(party, sum_request(1, theirs[0]))


def _rerun(job: tuple) -> LKCSession:
    """The party's session in a rerun's attempt."""
    party = session(job)
    party.attempt = 1
    return party


def test_a_resumed_rerun_replays_its_probe_and_adoption(job: tuple) -> None:
    """A rerun resumed from a prefix: iteration 0 probed three steps, iteration 1 adopted two,
    the instructions follow from iteration 2. A restart after iteration 3 replays the probe,
    the adoption and the instructions to the same chain and answers iteration 4 as before; a
    log whose probe differs from the one the party answered is refused."""
    log, _ = instructions(job, "infogain")
    assert len(log) >= 5
    probe = pb.PrefixProbe(instructions=log[:3])
    adopt = pb.PrefixAdopt(instructions=log[:2])
    party = _rerun(job)
    sealed: list[tuple[int, bytes]] = []
    party.on_applied = lambda count, chain: sealed.append((count, chain))
    first = sum_request(0, attempt=1)
    first.prefix_probe.CopyFrom(probe)
    second = sum_request(1, attempt=1)
    second.prefix_adopt.CopyFrom(adopt)
    answers = [party.contribution(first), party.contribution(second)]
    answers += [party.contribution(sum_request(i, log[i], 1)) for i in range(2, 5)]
    again = _rerun(job)
    again.replay(log[2:4], sealed[3], probe, adopt)  # answered 0..3; the leader resumes at 4
    assert again.chain == sealed[3][1] and again.next_iteration == 4
    assert np.array_equal(again.contribution(sum_request(4, log[4], 1)), answers[4])
    forged = pb.PrefixProbe(instructions=log[:2])
    with pytest.raises(ProtocolError, match="differ from those this party answered"):
        _rerun(job).replay(log[2:4], sealed[3], forged, adopt)
