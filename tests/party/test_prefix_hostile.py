"""A rerun's prefix messages and instructions from a leader that deviates (#28, session 11
review): each refused in one line before the party answers, so the leader learns the
survivors' statistics at no cut beyond the one it probed and no party's records vanish from
its counts unseen (docs/leakage.md, "Exclusion").

In-process sessions; the same refusals through real daemons: tests/distributed/
test_prefix_hostile.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedanon.errors import FedanonError
from fedanon.federation.wire import WireError, from_instruction
from fedanon.party.errors import ProtocolError
from fedanon.party.handlers.lkc_session import UNBOUNDED, LKCSession
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.distributed.conftest import adult_dataset, requires_adult
from tests.party.test_c45_session import KINDS, TABLE, _count, _items, _session, _sum
from tests.party.test_rejoin_replay import SESSION, instructions, job, session

__all__ = ["job"]  # the module fixture, shared


def _rerun(job: tuple) -> LKCSession:
    party = session(job)
    party.attempt = 1  # in a rerun's attempt (party/exclusion.py)
    return party


def _request(iteration: int, attempt: int = 1, **fields: Any) -> pb.SumRequest:
    """A sum of `attempt` (1: a rerun's, as ``_rerun``'s session is in)."""
    ref = pb.SessionRef(session_id=SESSION, iteration=iteration, attempt=attempt)
    return pb.SumRequest(ref=ref, **fields)


def _probe(log: list[pb.Instruction]) -> dict[str, Any]:
    return {"prefix_probe": pb.PrefixProbe(instructions=log)}


def _adopt(log: list[pb.Instruction]) -> dict[str, Any]:
    return {"prefix_adopt": pb.PrefixAdopt(instructions=log)}


def _bare(ins: pb.Instruction) -> pb.Instruction:
    """`ins`'s attribute and node with an empty bitmap: a step off the cut (once `ins` ran)."""
    return pb.Instruction(attr=ins.attr, node=ins.node)


def _no_child(ins: pb.Instruction) -> pb.Instruction:
    """`ins` with every bit cleared: its groups get no child."""
    out = pb.Instruction()
    out.CopyFrom(ins)
    out.nonempty = bytes(len(ins.nonempty))
    return out


def test_a_prefix_in_the_first_attempt_is_refused_and_unbounded_only_in_a_rerun(
    job: tuple,
) -> None:
    """No ``Rerun`` accepted (attempt 0): a probe or an adoption is refused before any work,
    the session still at iteration 0, and a sum keeps its state's size bound; the same probe
    is taken in a rerun's attempt, whose prefix messages only the server's limit bounds."""
    log, _ = instructions(job, "infogain")
    first = session(job)
    bound = first.request_limit("Sum")
    assert bound is not None and bound < UNBOUNDED
    for prefix in (_probe(log[:2]), _adopt(log[:1])):
        with pytest.raises(ProtocolError, match="only in a rerun's attempt"):
            first.contribution(_request(0, 0, **prefix))
        assert first.next_iteration == 0
    assert first.contribution(_request(0, 0)).size  # the first attempt's iteration 0 goes on
    rerun = _rerun(job)
    assert rerun.request_limit("Sum") == UNBOUNDED
    assert rerun.contribution(_request(0, **_probe(log[:2]))).size


def test_an_adoption_is_a_prefix_of_the_probed_log(job: tuple) -> None:
    """m <= j and the same steps: an adoption longer than the probe (the survivors' full
    statistics at a cut the first attempt never completed) or with other steps is refused
    before any work; the honest adoption is then still taken at iteration 1."""
    log, _ = instructions(job, "infogain")
    assert len(log) >= 5
    party = _rerun(job)
    party.contribution(_request(0, **_probe(log[:3])))
    for bad in (log[:4], log[:5], [log[1]], [log[0], log[2]], [log[3]]):
        with pytest.raises(ProtocolError, match="prefix of the probed specializations"):
            party.contribution(_request(1, **_adopt(bad)))
        assert party.next_iteration == 1
    honest = _rerun(job)
    honest.contribution(_request(0, **_probe(log[:3])))
    expected = honest.contribution(_request(1, **_adopt(log[:2])))
    assert np.array_equal(party.contribution(_request(1, **_adopt(log[:2]))), expected)
    assert party.next_iteration == 2


def test_an_empty_adoption_after_a_probe_resumes_from_the_root(job: tuple) -> None:
    """The empty prefix is a prefix of every log: the root's statistics."""
    log, _ = instructions(job, "infogain")
    party = _rerun(job)
    party.contribution(_request(0, **_probe(log[:2])))
    root = session(job).contribution(_request(0, 0))
    assert np.array_equal(party.contribution(_request(1, **_adopt([]))), root)


def test_a_step_off_the_cut_is_refused(job: tuple) -> None:
    """A repeated step or a value the cut does not hold, with the empty bitmap its empty link
    asks for: in a probe (a log of them would cost the party work without end) and in a
    sum's instruction; refused in one line naming the attribute."""
    log, _ = instructions(job, "infogain")
    for bad in (log[:3] + [_bare(log[2])] * 1000, [*log[:2], _bare(log[0])]):
        party = _rerun(job)
        with pytest.raises(ProtocolError, match="which is not a value of the cut"):
            party.contribution(_request(0, **_probe(bad)))
        assert party.next_iteration == 0 and party.probed is None
    taxonomies = job[2].taxonomies
    below = next(ins for ins in log if ins.node != taxonomies[ins.attr].root)
    party = session(job)
    party.contribution(_request(0, 0))  # the cut: the roots
    with pytest.raises(ProtocolError, match="which is not a value of the cut"):
        party.contribution(_request(1, 0, instruction=_bare(below)))
    assert party.next_iteration == 1


@requires_adult
def test_a_step_on_a_value_of_the_cut_that_no_group_holds_is_taken() -> None:
    """The engine may specialize a value of the cut that no record holds (a zero-count
    candidate is valid and may be the best one: on the first 4,000 Adult rows, L=2 K=10 C=0.5,
    at iteration 5), a step that moves no record: the party takes it and the run goes on to
    the end (a refusal of steps on no group failed `fedanon sim lkc --parties 20` there)."""
    dataset = adult_dataset().head(4000)
    spec = dataset.spec(L=2, K=10, C="0.5")
    log, sealed = instructions((dataset.table, spec, spec.schema(dataset.taxonomy)), spec.score)
    assert any(ins.nonempty_bits == 0 for ins in log)  # the step on no group is in the run
    assert sealed[-1][0] == len(log) + 1  # every step was answered


def test_a_bitmap_that_gives_local_records_no_child_is_refused(job: tuple) -> None:
    """Every bit cleared: the party's records on the link would leave every count and the
    release silently; refused as parties disagreeing on the data, in a probe and in a sum."""
    log, _ = instructions(job, "infogain")
    party = _rerun(job)
    with pytest.raises(FedanonError, match="holds local records"):
        party.contribution(_request(0, **_probe([_no_child(log[0])])))
    party = session(job)
    party.contribution(_request(0, 0))
    with pytest.raises(FedanonError, match="holds local records"):
        party.contribution(_request(1, 0, instruction=_no_child(log[0])))


@pytest.mark.parametrize("nonempty", [b"", b"\x03\x00", b"\x03\x00\x00"])
def test_a_bitmap_of_the_wrong_byte_length_is_refused(nonempty: bytes) -> None:
    """The bit count matches, the bytes do not: too few would read as zeros (groups left
    empty unseen), too many carry bits nothing reads."""
    message = pb.Instruction(attr=0, node=0, nonempty=nonempty, nonempty_bits=2)
    with pytest.raises(WireError, match="bytes, expected 1"):
        from_instruction(message, 1, 2)
    good = pb.Instruction(attr=0, node=0, nonempty=b"\x03", nonempty_bits=2)
    assert from_instruction(good, 1, 2).nonempty.tolist() == [[True, True]]


@pytest.mark.parametrize(
    "field", [{"prefix_probe": pb.PrefixProbe()}, {"prefix_adopt": pb.PrefixAdopt()}]
)
def test_a_kind_without_prefixes_refuses_one_on_its_sum(field: dict[str, object]) -> None:
    """A C4.5 (kACTUS, evaluation, randomization) sum's vector is the party's own step's; a
    prefix there is a deviation, refused in one line rather than ignored, and the pending
    vector is still taken by the next honest Sum."""
    c45 = _session()
    _count(c45, 1, [], _items(TABLE))
    request = _sum(c45, 1)
    for name, value in field.items():
        getattr(request, name).CopyFrom(value)
    with pytest.raises(ProtocolError, match=r"C4\.5 sum carries no prefix"):
        c45.contribution(request)
    assert c45.contribution(_sum(c45, 1)).size == 0
    assert KINDS.features == ["ward", "age"]


def _bad_bitmap(ins: pb.Instruction) -> pb.Instruction:
    out = pb.Instruction()
    out.CopyFrom(ins)
    out.nonempty_bits += 1
    return out


SPOILED = {
    "bitmap": lambda log: _bad_bitmap(log[2]),
    "no group": lambda log: _bare(log[0]),
    "no child": lambda log: _no_child(log[2]),
}


@pytest.mark.parametrize("spoiled", SPOILED)
def test_a_probe_refused_half_way_leaves_the_session_as_it_was(job: tuple, spoiled: str) -> None:
    """Its last step spoiled (a wrong bitmap, a step on no group, a bitmap that leaves local
    records in no group): refused, and the honest probe that follows answers what a fresh
    session answers (the first two steps are not left applied to the counting state), then
    the honest adoption too."""
    log, _ = instructions(job, "infogain")
    fresh = _rerun(job)
    expected = fresh.contribution(_request(0, **_probe(log[:4])))
    adopted = fresh.contribution(_request(1, **_adopt(log[:3])))
    party = _rerun(job)
    with pytest.raises((FedanonError, WireError)):
        party.contribution(_request(0, **_probe([*log[:2], SPOILED[spoiled](log)])))
    assert party.next_iteration == 0 and party.probed is None
    assert np.array_equal(party.contribution(_request(0, **_probe(log[:4]))), expected)
    assert np.array_equal(party.contribution(_request(1, **_adopt(log[:3]))), adopted)


def test_a_probe_answers_the_own_counts_of_its_cut(job: tuple) -> None:
    """The probe's answer is slot 0 (a group's own records, per class and sensitive value) of
    every live group, nothing of its children: at the root, the table's own counts; after
    steps, per group, counts that add up to the table's."""
    table, _spec, schema = job
    log, _ = instructions(job, "infogain")
    root = _rerun(job).contribution(_request(0, **_probe([])))
    n_class = len(schema.class_values)
    assert root[0] == len(table) and int(root[1 : 1 + n_class].sum()) == len(table)
    later = _rerun(job).contribution(_request(0, **_probe(log[:4])))
    groups = later.reshape(-1, root.size)
    assert groups.shape[0] > 1 and (groups.sum(axis=0) == root).all()


def test_a_rejoin_whose_adoption_is_no_prefix_of_its_probe_is_refused(job: tuple) -> None:
    """A Rejoin replays the probe and the adoption through the same checks as the sums: an
    adoption longer than the probe is refused there too, before the party answers anything."""
    log, _ = instructions(job, "infogain")
    party = _rerun(job)
    probe, longer = pb.PrefixProbe(instructions=log[:3]), pb.PrefixAdopt(instructions=log[:4])
    with pytest.raises(ProtocolError, match="prefix of the probed specializations"):
        party.replay([], (0, b""), probe, longer)
    honest = _rerun(job)
    honest.replay([], (0, b""), probe, pb.PrefixAdopt(instructions=log[:2]))
    assert honest.next_iteration == 2
