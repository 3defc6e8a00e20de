"""A retried hop gets the first answer: party/replay.py, with a stand-in servicer context."""

from __future__ import annotations

import threading
from functools import partial

import grpc
import pytest

from fedanon.party.replay import AnswerOnce
from fedanon.protos import fedanon_v1_pb2 as pb


class Aborted(Exception):
    """What ``context.abort`` raises in the stand-in."""


class Context:
    """The parts of ``grpc.ServicerContext`` the cache uses."""

    def __init__(self, remaining: float | None = 5.0) -> None:
        self.remaining = remaining
        self._code: grpc.StatusCode | None = None
        self._details = b""

    def time_remaining(self) -> float | None:
        return self.remaining

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details.encode()
        raise Aborted(details)

    def code(self) -> grpc.StatusCode | None:
        return self._code

    def details(self) -> bytes:
        return self._details


def refuse(context: Context, code: grpc.StatusCode, message: str) -> None:
    context.abort(code, f"party test: {message}")


def sum_request(iteration: int, data: bytes = b"\x01" * 8) -> pb.SumRequest:
    return pb.SumRequest(
        ref=pb.SessionRef(session_id="ab" * 16, iteration=iteration),
        partial=pb.Vector(data=data, length=len(data) // 8, dtype="<u8"),
    )


class Work:
    """Counts executions; optionally waits for a gate or fails."""

    def __init__(
        self,
        reply: pb.SumReply,
        gate: threading.Event | None = None,
        fail: str | None = None,
        code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE,
    ) -> None:
        self.reply, self.gate, self.fail, self.code, self.runs = reply, gate, fail, code, 0
        self.started = threading.Event()

    def __call__(self, context: Context) -> pb.SumReply:
        self.runs += 1
        self.started.set()
        if self.gate is not None:
            self.gate.wait(5)
        if self.fail is not None:
            context.abort(self.code, self.fail)
        return self.reply


def test_a_copy_gets_the_first_reply_without_a_second_execution() -> None:
    answers, work = AnswerOnce("test"), Work(pb.SumReply(sealed_total=b"first"))
    first = answers.answer("sum", 3, sum_request(3), Context(), refuse, lambda: work(Context()))
    again = answers.answer("sum", 3, sum_request(3), Context(), refuse, lambda: work(Context()))
    assert first.sealed_total == again.sealed_total == b"first"
    assert work.runs == 1


def test_a_copy_arriving_while_the_first_runs_waits_for_its_answer() -> None:
    gate = threading.Event()
    answers, work = AnswerOnce("test"), Work(pb.SumReply(sealed_total=b"slow"), gate)
    results: list[pb.SumReply] = []
    first = threading.Thread(
        target=lambda: results.append(
            answers.answer("sum", 1, sum_request(1), Context(), refuse, lambda: work(Context()))
        )
    )
    first.start()
    assert work.started.wait(5)
    copy = threading.Thread(
        target=lambda: results.append(
            answers.answer("sum", 1, sum_request(1), Context(), refuse, lambda: work(Context()))
        )
    )
    copy.start()
    copy.join(0.3)
    assert copy.is_alive(), "the copy did not wait for the first call"
    gate.set()
    first.join(5)
    copy.join(5)
    assert [r.sealed_total for r in results] == [b"slow", b"slow"]
    assert work.runs == 1


def test_a_copy_of_a_failed_call_gets_the_same_error() -> None:
    answers = AnswerOnce("test")
    failed = "party hospital-3: refused the partial sum (during iteration 2)"
    work = Work(pb.SumReply(), fail=failed, code=grpc.StatusCode.FAILED_PRECONDITION)
    outcomes = []
    for _ in range(2):
        context = Context()
        with pytest.raises(Aborted):
            answers.answer("sum", 2, sum_request(2), context, refuse, partial(work, context))
        outcomes.append((context.code(), context.details()))
    assert outcomes[0] == outcomes[1] == (grpc.StatusCode.FAILED_PRECONDITION, failed.encode())
    assert work.runs == 1


def test_a_copy_after_a_party_down_the_ring_was_unreachable_runs_again() -> None:
    """Rejoin (#28): the leader sends the sum again once the unreachable party rejoined; the
    hop must forward it again (nothing past it ran), not replay the old failure."""
    answers = AnswerOnce("test")
    down = Work(pb.SumReply(), fail="party hospital-3: unreachable (during iteration 2)")
    context = Context()
    with pytest.raises(Aborted):
        answers.answer("sum", 2, sum_request(2), context, refuse, partial(down, context))
    assert context.code() == grpc.StatusCode.UNAVAILABLE
    back = Work(pb.SumReply(sealed_total=b"after rejoin"))
    again = answers.answer("sum", 2, sum_request(2), Context(), refuse, lambda: back(Context()))
    assert again.sealed_total == b"after rejoin"
    assert (down.runs, back.runs) == (1, 1)
    copy = answers.answer("sum", 2, sum_request(2), Context(), refuse, lambda: back(Context()))
    assert copy.sealed_total == b"after rejoin" and back.runs == 1  # answered once


def test_another_message_for_the_same_iteration_is_refused() -> None:
    answers, work = AnswerOnce("test"), Work(pb.SumReply(sealed_total=b"x"))
    answers.answer("sum", 4, sum_request(4), Context(), refuse, lambda: work(Context()))
    context = Context()
    with pytest.raises(Aborted, match="different message for iteration 4"):
        answers.answer(
            "sum", 4, sum_request(4, b"\x02" * 8), context, refuse, lambda: work(Context())
        )
    assert context.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert work.runs == 1


def test_a_copy_that_outlives_its_deadline_is_refused() -> None:
    gate = threading.Event()
    answers, work = AnswerOnce("test"), Work(pb.SumReply(), gate)
    first = threading.Thread(
        target=lambda: answers.answer(
            "sum", 0, sum_request(0), Context(), refuse, lambda: work(Context())
        )
    )
    first.start()
    assert work.started.wait(5)
    context = Context(remaining=0.3)
    with pytest.raises(Aborted, match="still being served"):
        answers.answer("sum", 0, sum_request(0), context, refuse, lambda: work(Context()))
    assert context.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    gate.set()
    first.join(5)
    assert work.runs == 1


def test_later_iterations_run_and_earlier_ones_reach_the_session() -> None:
    """A later iteration is new work; an earlier one is not answered from the cache (the
    session refuses it as stale), and it does not evict the latest call."""
    answers = AnswerOnce("test")
    five, six = Work(pb.SumReply(sealed_total=b"5")), Work(pb.SumReply(sealed_total=b"6"))
    answers.answer("sum", 5, sum_request(5), Context(), refuse, lambda: five(Context()))
    answers.answer("sum", 6, sum_request(6), Context(), refuse, lambda: six(Context()))
    stale = Work(pb.SumReply(), fail="stale or out-of-order iteration 5 (expected 7)")
    with pytest.raises(Aborted, match="stale"):
        answers.answer("sum", 5, sum_request(5), Context(), refuse, lambda: stale(Context()))
    again = answers.answer("sum", 6, sum_request(6), Context(), refuse, lambda: six(Context()))
    assert again.sealed_total == b"6"
    assert (five.runs, six.runs, stale.runs) == (1, 1, 1)
    # Step kinds are separate: a union phase of iteration 6 is its own call.
    union = Work(pb.SumReply(sealed_total=b"u"))
    answers.answer("union phase 2", 6, sum_request(6), Context(), refuse, lambda: union(Context()))
    assert union.runs == 1


@pytest.mark.parametrize("code", [grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.UNAVAILABLE])
def test_a_refusal_by_the_party_itself_is_not_remembered(code: grpc.StatusCode) -> None:
    """A message this party refused (nothing executed) cannot block the genuine one: the next
    message for that iteration is served, and the call it replaced is still answered (whatever
    the refusal's code: not only UNAVAILABLE, which is never remembered from anyone)."""
    answers = AnswerOnce("test")
    three = Work(pb.SumReply(sealed_total=b"3"))
    answers.answer("sum", 3, sum_request(3), Context(), refuse, lambda: three(Context()))
    bogus = Work(pb.SumReply(), fail="party test: iteration 4 carries no instruction", code=code)
    context = Context()
    with pytest.raises(Aborted):
        answers.answer(
            "sum", 4, sum_request(4, b"\x09" * 8), context, refuse, lambda: bogus(context)
        )
    again = answers.answer("sum", 3, sum_request(3), Context(), refuse, lambda: three(Context()))
    assert again.sealed_total == b"3" and three.runs == 1
    genuine = Work(pb.SumReply(sealed_total=b"4"))
    reply = answers.answer("sum", 4, sum_request(4), Context(), refuse, lambda: genuine(Context()))
    assert reply.sealed_total == b"4" and genuine.runs == 1
