"""One LKC session as a party holds it: its records, its copy of T_g, and the protocol position.

The session enforces the order of the protocol: every message must carry this session's id and
the next expected iteration number, so a replayed, stale or reordered message is rejected
before it touches the data.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.crypto.pairwise import PairwiseMasker
from fedanon.crypto.sealed_total import SealedTotalChannel
from fedanon.errors import FedanonError
from fedanon.federation.wire import from_instruction
from fedanon.party.replay import AnswerOnce
from fedanon.party.union import UnionRole
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.schema import Schema


class ProtocolError(FedanonError):
    """A message out of order or for another session."""


class SessionBase:
    """What every kind of session has: an id, a lease clock, traffic counters, the ref check.

    ``touch`` renews the lease (the session's leader, or in the ring its predecessor, was just
    heard); ``idle_for`` is how long ago that was, which the servicer compares with the lease.
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.ended = False
        self.last_seen = time.monotonic()
        self.bytes_received = 0
        self.bytes_sent = 0
        self.next_iteration = 0

    def touch(self) -> None:
        self.last_seen = time.monotonic()

    def idle_for(self) -> float:
        return time.monotonic() - self.last_seen

    def check_ref(self, ref: pb.SessionRef, iteration: int | None = None) -> None:
        """Reject a message for another session or an unexpected iteration."""
        if ref.session_id != self.session_id:
            raise ProtocolError(
                f"message for session {ref.session_id[:12]} but the open session is "
                f"{self.session_id[:12]}"
            )
        want = self.next_iteration if iteration is None else iteration
        if ref.iteration != want:
            raise ProtocolError(
                f"stale or out-of-order iteration {ref.iteration} (expected {want})"
            )


class PartySession(SessionBase):
    """A party's state for one LKC session."""

    def __init__(
        self,
        session_id: str,
        spec: LKCJobSpec,
        schema: Schema,
        table: pd.DataFrame,
        ring: list[str],
        me: str,
        sum_mode: int,
    ) -> None:
        missing = [c for c in spec.drop if c not in table.columns]
        if missing:
            raise FedanonError(f"the table has no ID column '{missing[0]}' to drop")
        super().__init__(session_id)
        self.spec = spec
        self.schema = schema
        self.released_columns = [c for c in table.columns if c not in spec.drop]
        self.local = LocalParty(schema, table[self.released_columns])
        if me not in ring:
            raise FedanonError(f"this party ('{me}') is not in the session's ring {ring}")
        self.ring = ring
        self.position = ring.index(me)
        self.sum_mode = sum_mode
        self.union: UnionRole
        self.pairwise_key: X25519PrivateKey | None = None
        self.masker: PairwiseMasker | None = None
        self.answers = AnswerOnce(me)  # retried Sum and Union hops get the first answer
        self.sealed_totals: SealedTotalChannel | None = None  # the last party's, ring mode

    @property
    def successor(self) -> str | None:
        """The next party in the ring, or None for the last one (which answers the leader)."""
        return self.ring[self.position + 1] if self.position + 1 < len(self.ring) else None

    @property
    def predecessor(self) -> str | None:
        """The previous party in the ring, or None for the first one (called by the leader)."""
        return self.ring[self.position - 1] if self.position > 0 else None

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

    def release_table(self, suppressed: list[int] | None = None) -> pd.DataFrame:
        """What this party contributes to the union: its generalized records.

        `suppressed` (from the leader) names live partitions of T_g to release as suppressed;
        only a job with a suppression budget may name any.
        """
        wanted = np.asarray(suppressed or [], dtype=np.int64)
        if wanted.size:
            partitions = self.local.partitions
            if not self.spec.suppress:
                raise ProtocolError("the job has no suppression budget but partitions were named")
            if (wanted >= partitions.size).any() or not partitions.alive[wanted].all():
                raise ProtocolError("a suppressed partition is not a group of the final cut")
        return self.local.generalized_table(wanted, self.spec.suppressed_mode == "drop")

    def contribution(self, request: pb.SumRequest) -> np.ndarray:
        """Apply the request's instruction (if any) and return the local statistics vector."""
        self.check_ref(request.ref)
        if self.ended:
            raise ProtocolError("the session has ended")
        if request.ref.iteration == 0:
            if request.HasField("instruction"):
                raise ProtocolError("iteration 0 carries no instruction")
            stats = self.local.start()
        else:
            if not request.HasField("instruction"):
                raise ProtocolError(f"iteration {request.ref.iteration} carries no instruction")
            ins = request.instruction
            if ins.attr >= len(self.schema.taxonomies):
                raise ProtocolError(f"instruction names attribute #{ins.attr}, which is unknown")
            tax = self.schema.taxonomies[ins.attr]
            if ins.node >= tax.n_nodes or tax.is_leaf(ins.node):
                raise ProtocolError(
                    f"instruction names node #{ins.node} of '{tax.attribute}', "
                    "which cannot be specialized"
                )
            n_link = self.local.partitions.link(ins.attr, ins.node).size
            step = from_instruction(ins, n_link, len(tax.children[ins.node]))
            stats = self.local.specialize(step)
        self.next_iteration += 1
        return stats
