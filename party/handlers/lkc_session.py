"""One LKC session as a party holds it: its records, its copy of T_g, and the protocol position.

A ring session (party/session_base.py): every message must carry this session's id and the next
expected iteration number, so a replayed, stale or reordered message is rejected before it
touches the data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from fedanon.algorithms.tds.engines import EngineSettings
from fedanon.algorithms.tds.engines.base import CountingEngine, LocalEngine, PartyCounts
from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.algorithms.tds.layout import PartitionTable, Specialization, carried
from fedanon.algorithms.tds.prefix import replayed
from fedanon.errors import FedanonError
from fedanon.federation.wire import from_instruction
from fedanon.party.errors import NotExpected, ProtocolError
from fedanon.party.records import Batches, encode_record
from fedanon.party.session_base import RingSession
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.readers.sources import TableSource, as_source
from fedanon.schema import Schema
from fedanon.tables import Table

if TYPE_CHECKING:  # pandas loads with a job that asks for a DataFrame, not with the daemon
    import pandas as pd

#: A request limit no session state bounds (the servicer then applies the server's own).
UNBOUNDED = 1 << 62


class LKCSession(RingSession):
    """A party's state for one LKC session."""

    kind = "lkc"
    replays = True
    reruns = True

    def __init__(
        self,
        session_id: str,
        spec: LKCJobSpec,
        schema: Schema,
        table: pd.DataFrame | TableSource,
        ring: list[str],
        me: str,
        sum_mode: int,
        counting: CountingEngine | None = None,
    ) -> None:
        """`counting` is where the counting state lives ([table] engine; default: here)."""
        source = as_source(table)
        columns = source.columns
        missing = [c for c in spec.drop if c not in columns]
        if missing:
            raise FedanonError(f"the table has no ID column '{missing[0]}' to drop")
        super().__init__(session_id, ring, me, sum_mode)
        self.spec = spec
        self.schema = schema
        self.released_columns = [c for c in columns if c not in spec.drop]
        engine = counting or LocalEngine(EngineSettings())
        self.local: PartyCounts = engine.open(schema, source, self.released_columns)
        self._reopen: Callable[[], PartyCounts] = lambda: engine.open(
            schema, source, self.released_columns
        )
        # a rerun's iteration 0 probed a prefix: the (attribute, node) of its steps, of which
        # iteration 1 adopts a prefix
        self.probed: list[tuple[int, int]] | None = None
        self.cut = _roots(schema)  # each QID's values on the cut: what a step may name
        self._replayed = False  # a prefix was applied to the counting state (``_replay``)
        # The hash chain of the instructions applied so far and of this party's answers to them,
        # sealed before each answer leaves (`on_applied`): after a restart the party answers no
        # iteration twice with a different vector (party/rejoin.py).
        self.chain = hashlib.sha256(bytes.fromhex(session_id)).digest()
        self._expected: tuple[int, bytes] | None = None  # an answer given before a restart

    def close(self) -> None:
        super().close()
        self.local.close()

    def rekey(self, attempt: int, ring: list[str], me: str) -> None:
        """A rerun's attempt (session_base.py): the counting state, the cut and the chain
        start again (a probe or the root comes next), the table's encoding kept."""
        super().rekey(attempt, ring, me)
        self.probed = None
        self.cut = _roots(self.schema)
        self._fresh_counts()
        self._replayed = False
        self.chain = hashlib.sha256(self.binding).digest()
        self._expected = None

    def sum_request_limit(self) -> int:
        """The largest ``SumRequest`` the next iteration can need, from this session's state.

        Every party holds the same partition table. The next instruction splits live partitions
        into at most `widest` child groups each, so the partial sum has at most
        ``vector_length(live * widest)`` elements of 8 bytes and the bitmap one bit per group;
        64 KiB covers the rest of the message.
        """
        partitions = self.local.partitions
        live = int(np.count_nonzero(partitions.alive[: partitions.size]))
        widest = max((t.max_children for t in self.schema.taxonomies), default=1)
        groups = max(1, live * max(widest, 1))
        return 8 * self.local.layout.vector_length(groups) + groups // 8 + (1 << 16)

    def request_limit(self, method: str) -> int | None:
        """A rerun's prefix messages carry an earlier attempt's whole log, which this party's
        state cannot bound: like ``Rejoin``'s log, only the server's message limit does."""
        if method == "Sum" and self.rerunning and self.next_iteration < 2:
            return UNBOUNDED
        return super().request_limit(method)

    def release_table(self, suppressed: list[int] | None = None) -> Table:
        """What this party contributes to the union: its generalized records (an Arrow table
        where the party holds its table as Arrow: a daemon's).

        `suppressed` (from the leader) names live partitions of T_g to release as suppressed;
        only a job with a suppression budget may name any.
        """
        return self.local.generalized_table(
            self._suppressed(suppressed), self.spec.suppressed_mode == "drop"
        )

    def released_batches(self, suppressed: list[int] | None = None) -> Batches:
        """The generalized records as the counting engine makes them: one batch per shard,
        each read from its worker when the union takes it (the daemon holds one at a time)."""
        wanted, drop = self._suppressed(suppressed), self.spec.suppressed_mode == "drop"
        return lambda: self.local.released_rows(encode_record, wanted, drop)

    def _suppressed(self, suppressed: list[int] | None) -> np.ndarray:
        """The partitions the leader names as suppressed, checked against T_g."""
        wanted = np.asarray(suppressed or [], dtype=np.int64)
        if wanted.size:
            partitions = self.local.partitions
            if not self.spec.suppress:
                raise ProtocolError("the job has no suppression budget but partitions were named")
            if (wanted >= partitions.size).any() or not partitions.alive[wanted].all():
                raise ProtocolError("a suppressed partition is not a group of the final cut")
        return wanted

    def contribution(self, request: pb.SumRequest) -> np.ndarray:
        """Apply the request's instruction (if any) and return the local statistics vector."""
        self.check_ref(request.ref)
        if self.ended:
            raise NotExpected("the session has ended")
        self._check_prefix(request)
        iteration = request.ref.iteration
        if request.HasField("prefix_probe"):
            stats = self._probe(request.prefix_probe)
        elif request.HasField("prefix_adopt"):
            stats = self._adopt(request.prefix_adopt)
        elif iteration == 0:
            if request.HasField("instruction"):
                raise ProtocolError("iteration 0 carries no instruction")
            stats = self._carried(self.local.start())
        else:
            if not request.HasField("instruction"):
                raise ProtocolError(f"iteration {iteration} carries no instruction")
            step = self._step(request.instruction, self.cut, self.local.partitions)
            stats = self._carried(self.local.specialize(step))
            _specialized(self.cut, self.schema, step)
        self._chain(request, stats)
        return stats

    def _step(
        self, ins: pb.Instruction, cut: list[set[int]], partitions: PartitionTable
    ) -> Specialization:
        """The instruction as a step of T_g `partitions`, checked (attribute, node, bitmap);
        its node must be a value of the `cut` (the leader specializes only those): a repeated
        step, or one below the cut, is refused. A value of the cut may lie on no group (a child
        no party holds: the engine may still specialize it, a step that moves no record)."""
        if ins.attr >= len(self.schema.taxonomies):
            raise ProtocolError(f"instruction names attribute #{ins.attr}, which is unknown")
        tax = self.schema.taxonomies[ins.attr]
        if ins.node >= tax.n_nodes or tax.is_leaf(ins.node):
            raise ProtocolError(
                f"instruction names node #{ins.node} of '{tax.attribute}', "
                "which cannot be specialized"
            )
        if ins.node not in cut[ins.attr]:
            raise ProtocolError(
                f"instruction names node #{ins.node} of '{tax.attribute}', "
                "which is not a value of the cut"
            )
        n_link = partitions.link(ins.attr, ins.node).size
        return from_instruction(ins, n_link, len(tax.children[ins.node]))

    def _check_prefix(self, request: pb.SumRequest) -> None:
        """Refuse, before any work, a prefix outside a rerun or out of its place: a probe only
        at a rerun's iteration 0, the adoption only at its iteration 1 after a probe, neither
        with an instruction; after a probe, nothing but the adoption (docs/leakage.md,
        "Exclusion": the leader learns the survivors' counts at no other cut)."""
        probe, adopt = request.HasField("prefix_probe"), request.HasField("prefix_adopt")
        iteration = request.ref.iteration
        if (probe or adopt) and not self.rerunning:
            raise ProtocolError(
                "a prefix is sent only in a rerun's attempt, and this session is not in one"
            )
        if probe and (adopt or iteration != 0 or request.HasField("instruction")):
            raise ProtocolError("a prefix probe comes alone, at iteration 0")
        if adopt and (iteration != 1 or self.probed is None or request.HasField("instruction")):
            raise ProtocolError("a prefix adoption comes alone, at iteration 1 after a probe")
        if self.probed is not None and iteration == 1 and not adopt:
            raise ProtocolError("after a prefix probe, iteration 1 adopts a prefix")
        if adopt and self.probed is not None:
            kept = [(ins.attr, ins.node) for ins in request.prefix_adopt.instructions]
            if kept != self.probed[: len(kept)]:
                # the leader would learn the survivors' statistics at a cut it never probed
                raise ProtocolError(
                    "a prefix adoption keeps a prefix of the probed specializations, "
                    "and this one does not"
                )

    def _replay(self, instructions: Sequence[pb.Instruction], own_only: bool = False) -> np.ndarray:
        """Apply `instructions` from the roots, on a fresh counting state unless this session
        has counted nothing yet; the statistics of the live partitions they reach (prefix.py's
        ``replayed``). The whole log is checked first, each instruction against the link the
        steps before it leave in a copy of T_g and of the cut (as a sum's instruction is):
        one refused half way would leave the counting state ahead of the
        session, and the next message counted on it. A state a refused replay touched (the
        engine refuses a step that leaves its own records in no group) is not reused.

        `own_only`: only the own counts (slot 0) are read, so a counting state that can
        (``count_own_only``: the one-process party's) counts no other children block; the
        state is then fit for nothing else, and the next replay starts afresh."""
        shadow = PartitionTable.for_schema(self.schema)
        cut = _roots(self.schema)
        steps = []
        for ins in instructions:
            steps.append(self._step(ins, cut, shadow))
            shadow.specialize(self.schema, steps[-1])
            _specialized(cut, self.schema, steps[-1])
        if self.next_iteration or self._replayed:
            self._fresh_counts()
        self._replayed = True
        own_only_counting = getattr(self.local, "count_own_only", None)
        if own_only and own_only_counting is not None:
            own_only_counting()
        _, live = replayed(self.local, self.schema, steps)
        self.cut = cut
        return live

    def _fresh_counts(self) -> None:
        """A counting state that has counted nothing (the table's encoding kept where the
        engine can: LocalParty's ``restarted``)."""
        restarted = getattr(self.local, "restarted", None)
        if restarted is not None:
            self.local = restarted(self.schema)
        else:
            self.local.close()
            self.local = self._reopen()

    def _probe(self, probe: pb.PrefixProbe) -> np.ndarray:
        """Replay an earlier attempt's log; the own counts of the live partitions it reaches."""
        live = self._replay(probe.instructions, own_only=True)
        self.probed = [(ins.attr, ins.node) for ins in probe.instructions]
        return np.ascontiguousarray(live[:, 0, :]).reshape(-1).view(np.uint64)

    def _adopt(self, adopt: pb.PrefixAdopt) -> np.ndarray:
        """Start afresh at the chosen prefix; the carried statistics of its live partitions."""
        live = self._replay(adopt.instructions)
        partitions, layout = self.local.partitions, self.local.layout
        keys = partitions.keys[partitions.live_indices()]
        flat = np.ascontiguousarray(live).reshape(-1).view(np.uint64)
        kept: np.ndarray = flat[carried(layout, self.schema, keys)]
        return kept

    def _carried(self, stats: np.ndarray) -> np.ndarray:
        """The entries of the new partitions' statistics that the secure sum carries (the
        ones their cut values can make non-zero; layout.py's ``carried``)."""
        partitions, layout = self.local.partitions, self.local.layout
        new = stats.size // (layout.slots * layout.channels)
        keys = partitions.keys[partitions.size - new : partitions.size]
        kept: np.ndarray = stats[carried(layout, self.schema, keys)]
        return kept

    def _chain(self, request: pb.SumRequest, stats: np.ndarray) -> None:
        """Count the applied iteration (its instruction and this party's answer) into the
        chain; check it against an answer this party gave before a restart; seal it before the
        vector leaves."""
        instruction = b"".join(  # a prefix message counts as the iteration's instruction
            message.SerializeToString(deterministic=True)
            for message in (request.instruction, request.prefix_probe, request.prefix_adopt)
        )
        iteration = request.ref.iteration.to_bytes(8, "big")
        answer = hashlib.sha256(np.ascontiguousarray(stats).tobytes()).digest()
        self.chain = hashlib.sha256(self.chain + iteration + instruction + answer).digest()
        self.next_iteration += 1
        if self._expected is not None and self._expected[0] == self.next_iteration:
            expected, self._expected = self._expected[1], None
            if expected != self.chain:
                self.ended = True  # nothing more is answered in this session
                raise ProtocolError(
                    f"iteration {request.ref.iteration} differs from the one this party answered "
                    "before its restart (another instruction, or its table changed: its masks "
                    "would reveal the difference)"
                )
        if self.on_applied is not None:
            self.on_applied(self.next_iteration, self.chain)

    def replay(
        self,
        instructions: list[pb.Instruction],
        answered: tuple[int, bytes],
        probe: pb.PrefixProbe | None = None,
        adopt: pb.PrefixAdopt | None = None,
    ) -> None:
        """Rejoin by replay: iteration 0, then every instruction in order, each checked as
        when it first came (the secure sums' answers are discarded: the others have them). In
        a rerun resumed from a prefix, iteration 0 carries the `probe` and iteration 1 the
        `adopt`ion, and the instructions follow from iteration 2.

        `answered` is what the party had sealed: (iterations answered, their chain). The log
        must reproduce it exactly; if the party had answered one iteration more, the leader's
        copy of that iteration must carry the same instruction (checked when it comes)."""
        count, chain = answered
        requests = [pb.SumRequest()]
        if probe is not None:
            requests[0].prefix_probe.CopyFrom(probe)
        if adopt is not None:
            requests.append(pb.SumRequest(prefix_adopt=adopt))
        for instruction in instructions:
            requests.append(pb.SumRequest(instruction=instruction))
        if count > len(requests) + 1:
            raise ProtocolError(
                f"this party answered {count} iterations before its restart, the leader "
                f"resumes at iteration {len(requests)}"
            )
        self._expected = answered if count == len(requests) + 1 else None
        for iteration, request in enumerate(requests):
            request.ref.CopyFrom(
                pb.SessionRef(session_id=self.session_id, iteration=iteration, attempt=self.attempt)
            )
            self.contribution(request)
            if self.next_iteration == count and self.chain != chain:
                raise ProtocolError(
                    f"the leader's instructions up to iteration {iteration} differ from those "
                    "this party answered before its restart, or its table changed"
                )


def _roots(schema: Schema) -> list[set[int]]:
    """The cut before any step: each QID at its taxonomy's root."""
    return [{t.root} for t in schema.taxonomies]


def _specialized(cut: list[set[int]], schema: Schema, step: Specialization) -> None:
    """`cut` after `step`: its node's children replace it."""
    cut[step.attr].discard(step.node)
    cut[step.attr].update(schema.taxonomies[step.attr].children[step.node])
