"""The federation as the engine's count source: every statistics request is one secure sum.

The secure sum is one interface, :class:`SumProtocol`, with the two protocols below as its
implementations; a session picks one at the handshake from the job's ``sum_mode``
(:data:`SUM_PROTOCOLS`) and the count source calls it without asking which it is.

Ring mode (the paper's protocol): the leader draws a fresh cryptographic mask R for the round,
sends R with the instruction to the first party; each party applies the instruction, adds its
local statistics and forwards; the last party seals the masked total to the leader
(crypto/sealed_total.py), the sealed answer travels back, and the leader opens it and removes
R. Only the leader learns the global sums; parties see uniformly masked vectors on the way out
and bytes they cannot open on the way back.

Pairwise mode (collusion-resistant): the instruction goes to every party at once; each answers
with its vector masked by pairwise masks that cancel in the sum (crypto/pairwise.py), and the
leader refuses to combine an incomplete set of answers.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

import grpc
import numpy as np

from fedanon.algorithms.tds.layout import (
    CarriedMasks,
    DynamicSplit,
    Specialization,
    StatsLayout,
    restored,
)
from fedanon.algorithms.tds.prefix import apply_all
from fedanon.crypto.errors import CryptoError
from fedanon.crypto.pairwise import PairwiseAggregator
from fedanon.crypto.sealed_total import SealedTotalChannel
from fedanon.crypto.secure_sum import start_round
from fedanon.errors import FedanonError
from fedanon.federation.wire import to_instruction
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from fedanon.schema import Schema

T = TypeVar("T")


class PartyFailure(FedanonError):
    """A party failed or timed out; the message names the party and the phase.

    `party` and `code` (when known) say who and how, for the leader's rejoin
    (leader/rejoin.py): an unreachable party is waited for, any other failure is final.
    """

    exit_code = 4

    def __init__(
        self, message: str, party: str | None = None, code: grpc.StatusCode | None = None
    ) -> None:
        super().__init__(message)
        self.party = party
        self.code = code


def describe_rpc_error(exc: grpc.RpcError, default_party: str, phase: str) -> PartyFailure:
    """Turn a gRPC error into a one-line failure naming the party (from the chain if known)."""
    detail = exc.details() or ""
    code = exc.code()
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and not detail.startswith("party "):
        detail = f"party {default_party}: no answer before the deadline"
    elif code == grpc.StatusCode.UNAVAILABLE and not detail.startswith("party "):
        detail = f"party {default_party}: unreachable ({detail})"
    elif not detail.startswith("party "):
        detail = f"party {default_party}: {detail or code.name}"
    party = detail[len("party ") :].split(":", 1)[0]
    return PartyFailure(f"{phase}: {detail}", party=party, code=code)


class Resender(Protocol):
    """How a secure sum sends one iteration again after a missing party rejoined
    (leader/rejoin.py's ``Rejoiner``; :class:`NoRejoin` where a job kind cannot replay)."""

    #: (party, iteration) of every rejoin so far, for the report.
    rejoined: list[tuple[str, int]]

    def resend(self, send: Callable[[], T], iteration: int) -> T: ...

    def record(self, request: pb.SumRequest) -> None: ...

    def union(self, run: Callable[[int], T], round_: int, resumable: bool = False) -> T: ...


class NoRejoin:
    """Send once: any failure is final (the job kinds whose parties cannot replay)."""

    def __init__(self) -> None:
        self.rejoined: list[tuple[str, int]] = []

    def resend(self, send: Callable[[], T], iteration: int) -> T:
        return send()

    def record(self, request: pb.SumRequest) -> None:
        """Nothing to log."""

    def union(self, run: Callable[[int], T], round_: int, resumable: bool = False) -> T:
        return run(round_)


@dataclass
class Traffic:
    """Bytes the leader sent to and received from the federation, per phase."""

    sent: dict[str, int] = field(default_factory=dict)
    received: dict[str, int] = field(default_factory=dict)

    def add(self, phase: str, sent: int, received: int) -> None:
        self.sent[phase] = self.sent.get(phase, 0) + sent
        self.received[phase] = self.received.get(phase, 0) + received


FanOut = Callable[[str, Callable[[str, pb_grpc.PartyStub], Any]], dict[str, Any]]


@dataclass(frozen=True)
class RingCalls:
    """What a secure-sum protocol uses of an open ring session (leader/ring.py builds it from
    the session and its shared union keys, so that this module imports neither)."""

    session_id: str
    ring: list[str]
    stubs: dict[str, pb_grpc.PartyStub]
    fan_out: FanOut
    rpc_seconds: float
    sealed_totals: Callable[[], SealedTotalChannel]
    rejoin: Resender = field(default_factory=NoRejoin)
    attempt: int = 0  # the session's attempt (a rerun's: its masks are bound to it)


class SumProtocol(ABC):
    """The leader's half of one session's secure sum: a request in, the global sums out."""

    @abstractmethod
    def total(self, request: pb.SumRequest, length: int, traffic: Traffic) -> np.ndarray:
        """The parties' summed `length`-element vectors for `request` (its ref and
        instruction set; the protocol adds what it carries itself)."""


class RingSum(SumProtocol):
    """Mask, send around the ring, open the last party's sealed total, unmask."""

    def __init__(
        self,
        ring: Sequence[str],
        stubs: dict[str, pb_grpc.PartyStub],
        rpc_seconds: float,
        sealed_totals: SealedTotalChannel,
        rejoin: Resender | None = None,
    ) -> None:
        self.ring = list(ring)
        self.stubs = stubs
        self.rpc_seconds = rpc_seconds
        self.sealed_totals = sealed_totals
        self.rejoin = rejoin or NoRejoin()

    @classmethod
    def opened(cls, calls: RingCalls) -> RingSum:
        """For a session whose union keys are shared (the last party seals with them)."""
        return cls(calls.ring, calls.stubs, calls.rpc_seconds, calls.sealed_totals(), calls.rejoin)

    def total(self, request: pb.SumRequest, length: int, traffic: Traffic) -> np.ndarray:
        iteration = request.ref.iteration
        mask, payload = start_round(length)
        request.partial.CopyFrom(pb.Vector(data=payload, length=length, dtype="<u8"))
        first, last = self.ring[0], self.ring[-1]
        phase = f"secure sum, iteration {iteration}"
        timeout = self.rpc_seconds * (1 + 0.25 * len(self.ring))

        def send() -> pb.SumReply:
            try:
                return cast(pb.SumReply, self.stubs[first].Sum(request, timeout=timeout))
            except grpc.RpcError as exc:
                raise describe_rpc_error(exc, first, phase) from exc

        reply = self.rejoin.resend(send, iteration)  # the same message (and mask) again
        self.rejoin.record(request)
        try:
            payload = self.sealed_totals.open(iteration, length, reply.sealed_total)
        except (FedanonError, CryptoError) as exc:
            raise PartyFailure(f"{phase}: party {last}: {exc}") from exc
        traffic.add("sum", request.ByteSize(), reply.ByteSize())
        return mask.unmask(payload)


class PairwiseSum(SumProtocol):
    """Send the request to every party at once; combine their pairwise-masked shares."""

    def __init__(
        self,
        ring: Sequence[str],
        session_id: str,
        fan_out: FanOut,
        rpc_seconds: float,
        rejoin: Resender | None = None,
        attempt: int = 0,
    ) -> None:
        self.fan_out = fan_out
        self.rpc_seconds = rpc_seconds
        self.aggregator = PairwiseAggregator(list(ring), bytes.fromhex(session_id), attempt)
        self.rejoin = rejoin or NoRejoin()

    @classmethod
    def opened(cls, calls: RingCalls) -> PairwiseSum:
        """For a session whose parties drew pairwise keys at the handshake."""
        return cls(
            calls.ring,
            calls.session_id,
            calls.fan_out,
            calls.rpc_seconds,
            calls.rejoin,
            calls.attempt,
        )

    def total(self, request: pb.SumRequest, length: int, traffic: Traffic) -> np.ndarray:
        phase = f"secure sum (pairwise), iteration {request.ref.iteration}"
        # After a rejoin the whole fan-out goes again: the parties that answered answer the
        # same message from their replay cache, the resumed one for the first time.
        replies = self.rejoin.resend(
            lambda: self.fan_out(phase, lambda n, s: s.Sum(request, timeout=self.rpc_seconds)),
            request.ref.iteration,
        )
        self.rejoin.record(request)
        try:
            total = self.aggregator.combine(
                request.ref.iteration, {n: bytes(r.pairwise_share) for n, r in replies.items()}
            )
        except (FedanonError, CryptoError, ValueError) as exc:
            raise PartyFailure(f"{phase}: {exc}") from exc
        if total.size != length:
            raise PartyFailure(f"{phase}: {total.size} elements, expected {length}")
        traffic.add(
            "sum", request.ByteSize() * len(replies), sum(r.ByteSize() for r in replies.values())
        )
        return total


#: How a session makes its secure-sum protocol once its keys are shared.
MakeSum = Callable[[RingCalls], SumProtocol]

#: The job's ``sum_mode`` -> its wire value and how a session makes its protocol.
SUM_PROTOCOLS: dict[str, tuple[pb.SumMode, MakeSum]] = {
    "ring": (pb.SUM_MODE_RING, RingSum.opened),
    "pairwise": (pb.SUM_MODE_PAIRWISE, PairwiseSum.opened),
    # The leader combines the shares alike; only the parties' mask graph differs.
    "sparse": (pb.SUM_MODE_PAIRWISE_SPARSE, PairwiseSum.opened),
}


class FederationSource:
    """Count source backed by party daemons: one secure sum per statistics request."""

    def __init__(
        self,
        session_id: str,
        layout: StatsLayout,
        sums: SumProtocol,
        traffic: Traffic,
        on_round: Callable[[int, int], None] | None = None,
        schema: Schema | None = None,
        attempt: int = 0,
    ) -> None:
        """`schema` (LKC): sum only the entries the new partitions' cut values can make
        non-zero (layout.py's ``carried``), tracking T_g in a copy of its own to know them;
        without it every entry of the layout is summed. `attempt`: the session's (a rerun's
        sums start again at iteration 0)."""
        self.session_id = session_id
        self.attempt = attempt
        self.layout = layout
        self.masks = None if schema is None else CarriedMasks(layout, schema)
        self.sums = sums
        self.traffic = traffic
        self.on_round = on_round
        self.iteration = 0
        self.seconds = 0.0
        # The specializations whose sums completed, from the roots (a resumed run's prefix
        # first): what a rerun without a party that drops out may resume from.
        self.completed: list[Specialization] = []

    def atom_histogram(self, attr: int, node: int) -> np.ndarray:
        raise FedanonError("dynamic numerical splits are not available in distributed mode")

    def start(self, splits: Sequence[DynamicSplit]) -> np.ndarray:
        if splits:
            raise FedanonError("dynamic numerical splits are not available in distributed mode")
        return self._sum(pb.SumRequest(), 1, None if self.masks is None else self.masks.start())

    def specialize(self, step: Specialization) -> np.ndarray:
        if step.splits:
            raise FedanonError("dynamic numerical splits are not available in distributed mode")
        mask = None if self.masks is None else self.masks.specialize(step)
        request = pb.SumRequest(instruction=to_instruction(step))
        total = self._sum(request, int(np.count_nonzero(step.nonempty)), mask)
        self.completed.append(step)
        return total

    def probe(self, steps: Sequence[Specialization]) -> np.ndarray:
        """A rerun's iteration 0: the parties replay an earlier attempt's `steps` (its masks)
        and this is the sum of their own counts (slot 0) of the live partitions they reach,
        (partitions x channels) in partition order (fedanon/algorithms/tds/prefix.py)."""
        table, _ = apply_all(self._prefixed().schema, steps)
        live = int(table.live_indices().size)
        request = pb.SumRequest(prefix_probe=pb.PrefixProbe(instructions=map_steps(steps)))
        total = self._sum(request, 0, None, live * self.layout.channels)
        return total.view(np.int64).reshape(live, self.layout.channels)

    def resume(self, steps: Sequence[Specialization]) -> np.ndarray:
        """The next iteration adopts the prefix `steps` (the survivors' masks): the summed
        statistics of the live partitions they reach (the engine's ``resume``)."""
        masks = self._prefixed()
        mask = masks.resume(steps)  # its copy of T_g then holds the prefix's live partitions
        request = pb.SumRequest(prefix_adopt=pb.PrefixAdopt(instructions=map_steps(steps)))
        total = self._sum(request, int(masks.table.live_indices().size), mask)
        self.completed = list(steps)
        return total

    def _prefixed(self) -> CarriedMasks:
        """The copy of T_g a prefix is laid out by: only a source given the job's schema has
        one (an LKC job's always is)."""
        if self.masks is None:
            raise FedanonError("a prefix needs the job's schema")
        return self.masks

    def _sum(
        self,
        request: pb.SumRequest,
        n_partitions: int,
        mask: np.ndarray | None,
        length: int | None = None,
    ) -> np.ndarray:
        """The summed statistics of `n_partitions` new partitions for `request` (its
        instruction or prefix set); with a `mask`, only its entries are summed and the rest
        restored as zeros; a `length` other than the layout's is summed as it is."""
        began = time.perf_counter()
        if length is None:
            length = self.layout.vector_length(n_partitions)
        if mask is not None:
            length = int(np.count_nonzero(mask))
        request.ref.CopyFrom(
            pb.SessionRef(
                session_id=self.session_id, iteration=self.iteration, attempt=self.attempt
            )
        )
        total = self.sums.total(request, length, self.traffic)
        if mask is not None:
            total = restored(total, mask)
        if self.on_round is not None:
            self.on_round(self.iteration, length)
        self.iteration += 1
        self.seconds += time.perf_counter() - began
        return total


def map_steps(steps: Sequence[Specialization]) -> list[pb.Instruction]:
    """`steps` as the instructions that carry them."""
    return [to_instruction(step) for step in steps]
