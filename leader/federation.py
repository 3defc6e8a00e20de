"""The federation as the engine's count source: every statistics request is one secure sum.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
import numpy as np

from fedanon.algorithms.tds.layout import DynamicSplit, Specialization, StatsLayout
from fedanon.crypto.errors import CryptoError
from fedanon.crypto.pairwise import PairwiseAggregator
from fedanon.crypto.sealed_total import SealedTotalChannel
from fedanon.crypto.secure_sum import start_round
from fedanon.errors import FedanonError
from fedanon.federation.wire import to_instruction
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc


class PartyFailure(FedanonError):
    """A party failed or timed out; the message names the party and the phase."""

    exit_code = 4


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
    return PartyFailure(f"{phase}: {detail}")


@dataclass
class Traffic:
    """Bytes the leader sent to and received from the federation, per phase."""

    sent: dict[str, int] = field(default_factory=dict)
    received: dict[str, int] = field(default_factory=dict)

    def add(self, phase: str, sent: int, received: int) -> None:
        self.sent[phase] = self.sent.get(phase, 0) + sent
        self.received[phase] = self.received.get(phase, 0) + received


FanOut = Callable[[str, Callable[[str, pb_grpc.PartyStub], Any]], dict[str, Any]]


class FederationSource:
    """Count source backed by party daemons in ring order."""

    def __init__(
        self,
        session_id: str,
        ring: Sequence[str],
        stubs: dict[str, pb_grpc.PartyStub],
        layout: StatsLayout,
        rpc_seconds: float,
        traffic: Traffic,
        on_round: Callable[[int, int], None] | None = None,
        fan_out: FanOut | None = None,
        sealed_totals: SealedTotalChannel | None = None,
    ) -> None:
        """Ring mode needs `sealed_totals` (the leader's end of the last party's channel);
        pairwise mode needs `fan_out`."""
        if fan_out is None and sealed_totals is None:
            raise ValueError("ring mode needs the channel that opens the last party's totals")
        self.session_id = session_id
        self.ring = list(ring)
        self.stubs = stubs
        self.layout = layout
        self.rpc_seconds = rpc_seconds
        self.traffic = traffic
        self.on_round = on_round
        self.iteration = 0
        self.seconds = 0.0
        self.fan_out = fan_out
        self.sealed_totals = sealed_totals
        self.aggregator = (
            PairwiseAggregator(self.ring, bytes.fromhex(session_id))
            if fan_out is not None
            else None
        )

    def atom_histogram(self, attr: int, node: int) -> np.ndarray:
        raise FedanonError("dynamic numerical splits are not available in distributed mode")

    def start(self, splits: Sequence[DynamicSplit]) -> np.ndarray:
        if splits:
            raise FedanonError("dynamic numerical splits are not available in distributed mode")
        return self._sum(None, 1)

    def specialize(self, step: Specialization) -> np.ndarray:
        if step.splits:
            raise FedanonError("dynamic numerical splits are not available in distributed mode")
        return self._sum(to_instruction(step), int(np.count_nonzero(step.nonempty)))

    def _sum(self, instruction: pb.Instruction | None, n_partitions: int) -> np.ndarray:
        began = time.perf_counter()
        length = self.layout.vector_length(n_partitions)
        if self.fan_out is None:
            total = self._ring_sum(instruction, length)
        else:
            total = self._pairwise_sum(instruction, length)
        if self.on_round is not None:
            self.on_round(self.iteration, length)
        self.iteration += 1
        self.seconds += time.perf_counter() - began
        return total

    def _pairwise_sum(self, instruction: pb.Instruction | None, length: int) -> np.ndarray:
        assert self.fan_out is not None and self.aggregator is not None
        request = pb.SumRequest(
            ref=pb.SessionRef(session_id=self.session_id, iteration=self.iteration)
        )
        if instruction is not None:
            request.instruction.CopyFrom(instruction)
        replies = self.fan_out(
            f"secure sum (pairwise), iteration {self.iteration}",
            lambda n, s: s.Sum(request, timeout=self.rpc_seconds),
        )
        try:
            total = self.aggregator.combine(
                self.iteration, {n: bytes(r.pairwise_share) for n, r in replies.items()}
            )
        except (FedanonError, CryptoError, ValueError) as exc:
            raise PartyFailure(f"secure sum (pairwise), iteration {self.iteration}: {exc}") from exc
        if total.size != length:
            raise PartyFailure(
                f"secure sum (pairwise), iteration {self.iteration}: "
                f"{total.size} elements, expected {length}"
            )
        self.traffic.add(
            "sum", request.ByteSize() * len(replies), sum(r.ByteSize() for r in replies.values())
        )
        return total

    def _ring_sum(self, instruction: pb.Instruction | None, length: int) -> np.ndarray:
        mask, payload = start_round(length)
        request = pb.SumRequest(
            ref=pb.SessionRef(session_id=self.session_id, iteration=self.iteration),
            partial=pb.Vector(data=payload, length=length, dtype="<u8"),
        )
        if instruction is not None:
            request.instruction.CopyFrom(instruction)
        assert self.sealed_totals is not None
        first, last = self.ring[0], self.ring[-1]
        phase = f"secure sum, iteration {self.iteration}"
        timeout = self.rpc_seconds * (1 + 0.25 * len(self.ring))
        try:
            reply = self.stubs[first].Sum(request, timeout=timeout)
        except grpc.RpcError as exc:
            raise describe_rpc_error(exc, first, phase) from exc
        try:
            payload = self.sealed_totals.open(self.iteration, length, reply.sealed_total)
        except (FedanonError, CryptoError) as exc:
            raise PartyFailure(f"{phase}: party {last}: {exc}") from exc
        total = mask.unmask(payload)
        self.traffic.add("sum", request.ByteSize(), reply.ByteSize())
        return total
