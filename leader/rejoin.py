"""Rejoin by replay at the leader: a party that went away mid-specialization is waited for,
resumed, and asked again (docs/distributed.md, "Rejoin").

The leader keeps the instruction log (the specializations it sent, its own messages, nothing
secret). When a secure sum fails because a party is unreachable (``UNAVAILABLE``, from the
party itself or relayed by its ring predecessor; a restarted party says so too until it is
resumed), the leader waits for that party, at most ``[timeouts] rejoin_seconds`` from the
failure, sends it ``Rejoin`` with the log, and sends the failed sum again, the same message:
the parties that had answered it answer from their replay cache (or, in the ring, forward the
same vector again) and the resumed party, whose sealed keys give it the same masks as before,
answers it for the first time. The release is the one a run without the fault makes. A party
that does not come back in time fails the job with the usual one-line failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import grpc

from fedanon.federation.transport import ready_within
from fedanon.leader.federation import PartyFailure, describe_rpc_error
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc

T = TypeVar("T")

#: job.toml's [timeouts] rejoin_seconds by default: rejoin is the default recovery, and a minute
#: covers a daemon's restart (its table read again) by an operator or a supervisor.
DEFAULT_REJOIN_SECONDS = 60.0


@dataclass
class Rejoiner:
    """The instruction log of one session and its parties' rejoins.

    `stubs` reach the parties over `channels` (waited on for a lost party), `seconds` bounds
    the wait for one that went away (0: fail at once, as without rejoin), `rpc_seconds` the
    replay at the party once it is back.
    `rejoined` lists (party, iteration) of every rejoin, for the report.
    """

    session_id: str
    ring: list[str]
    stubs: dict[str, pb_grpc.PartyStub]
    seconds: float
    rpc_seconds: float
    channels: Mapping[str, object] = field(default_factory=dict)
    log: list[pb.Instruction] = field(default_factory=list)
    rejoined: list[tuple[str, int]] = field(default_factory=list)
    # A rerun resumed from a prefix (leader/exclusion.py): its iteration 0's probe and its
    # iteration 1's adoption, once answered; the instructions then start at iteration 2.
    probe: pb.PrefixProbe | None = None
    adopt: pb.PrefixAdopt | None = None
    # The session's attempt (a rerun's): a restored party replays its switch to `ring` first.
    attempt: int = 0

    def ref(self, iteration: int) -> pb.SessionRef:
        return pb.SessionRef(session_id=self.session_id, iteration=iteration, attempt=self.attempt)

    def record(self, request: pb.SumRequest) -> None:
        """A sum every party answered: its instruction joins the log (iteration ``i`` holds
        the ``i``-th instruction, or the ``i - 1``-th after an adoption; iteration 0 has
        none), a prefix message is kept as it is."""
        if request.HasField("prefix_probe"):
            self.probe = request.prefix_probe
        if request.HasField("prefix_adopt"):
            self.adopt = request.prefix_adopt
        first = 1 if self.adopt is None else 2
        if request.HasField("instruction") and request.ref.iteration == len(self.log) + first:
            self.log.append(request.instruction)

    def resend(self, send: Callable[[], T], iteration: int) -> T:
        """`send` (one iteration's secure sum), again after each missing party rejoined,
        within `seconds` of the first failure; any other failure is raised as it is."""
        deadline: float | None = None
        while True:
            try:
                return send()
            except PartyFailure as failure:
                name = self.missing(failure)
                if name is None or self.seconds <= 0:
                    raise
                if deadline is None:
                    deadline = time.monotonic() + self.seconds
                self._rejoin(name, iteration, deadline, failure)

    def union(self, run: Callable[[int], T], round_: int, resumable: bool = False) -> T:
        """The union, `run` as round `round_` (the round after the last secure sum), within
        `seconds` of the first failure that a lost party rejoined from.

        `resumable` (the layered union): after the rejoin `run` goes on in the same round,
        the caller keeping what the other parties already gave (leader/union.py's
        ``UnionProgress``); they answer what they had answered again from their replay cache
        and a hop forwards the batch it peeled again (party/union.py). A party that cannot
        resume (it already let its sealed records go in this round: ``ABORTED``) makes the
        union start again as the next round. Not `resumable` (the shuffle mode, whose shares
        live only in the parties' memory): every party drops the interrupted union and it runs
        again from its first phase as the next round (new contexts, fresh sealing)."""
        deadline: float | None = None
        attempt = round_
        restart = False
        while True:
            try:
                if restart:
                    attempt += 1
                    self._restart_union(round_, attempt, self.ring)
                return run(attempt)
            except PartyFailure as failure:
                restart = not resumable
                if resumable and deadline is not None and failure.code == grpc.StatusCode.ABORTED:
                    restart = True
                    continue
                name = self.missing(failure)
                if name is None or self.seconds <= 0:
                    raise
                if deadline is None:
                    deadline = time.monotonic() + self.seconds
                restored = self._rejoin(name, round_, deadline, failure)
                if restored and attempt > round_ and not restart:
                    # Resumed at the end of the specialization: it takes the round up there.
                    self._restart_union(round_, attempt, [name])

    def _restart_union(self, iteration: int, union_round: int, names: list[str]) -> None:
        """Tell parties `names` at once that the union runs as `union_round` from its start."""
        request = pb.RejoinRequest(ref=self.ref(iteration), union_round=union_round)
        calls = {
            name: self.stubs[name].Rejoin.future(request, timeout=self.rpc_seconds)
            for name in names
        }
        for name, call in calls.items():
            try:
                call.result()
            except grpc.RpcError as exc:
                raise describe_rpc_error(exc, name, f"union restart (round {union_round})") from exc

    def missing(self, failure: PartyFailure) -> str | None:
        """The party a failure says is unreachable (down or restarted), or None."""
        if failure.code == grpc.StatusCode.UNAVAILABLE and failure.party in self.ring:
            return failure.party
        return None

    def _rejoin(self, name: str, iteration: int, deadline: float, failure: PartyFailure) -> bool:
        """Wait for party `name` until `deadline`, then resume it at `iteration`; whether it
        was restored from its sealed state (it had restarted) rather than found still open.

        No polling: the leader waits for the party's channel to be ready (the session's
        channels try to reconnect every quarter second: federation/transport.py's
        RECONNECT_OPTIONS; a relay's tunnel waits for its party's stream itself), so the
        ``Rejoin`` leaves as soon as the restarted daemon listens, and then gets
        ``rpc_seconds`` for the replay."""
        first = 1 if self.adopt is None else 2
        request = pb.RejoinRequest(
            ref=self.ref(iteration),
            instructions=self.log[: max(iteration - first, 0)],
            prefix_probe=self.probe,
            prefix_adopt=self.adopt,
            rerun_ring=self.ring if self.attempt else [],
        )
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise PartyFailure(
                    f"{failure}; it did not rejoin within {self.seconds:g} s",
                    party=name,
                    code=failure.code,
                ) from failure
            channel = self.channels.get(name)
            # A relay's tunnel waits for its party itself; a channel not back within the bound
            # meets the failure above.
            if isinstance(channel, grpc.Channel) and not ready_within(channel, left):
                continue
            try:
                reply = self.stubs[name].Rejoin(
                    request, timeout=self.rpc_seconds, wait_for_ready=True
                )
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.UNAVAILABLE:
                    continue  # gone again, or the relay's wait for it ended: wait once more
                detail = exc.details() or exc.code().name
                raise PartyFailure(f"{failure}; rejoin refused: {detail}") from failure
            self.rejoined.append((name, iteration))
            return bool(reply.restored)
