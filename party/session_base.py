"""What every session a party holds has in common, whatever its job kind.

The session enforces the order of the protocol: every message must carry this session's id and
the next expected iteration number, so a replayed, stale or reordered message is rejected
before it touches the data. Ring sessions (the job kinds that run the secure sum and the secure
set union around the ring: LKC and randomization) also know their ring position, their union
keys and the secure-sum protocol chosen at the handshake.

Nothing here imports an algorithm: the servicer shell works with these types only, and each job
kind's session (party/handlers/lkc_session.py, drbt_session.py, randomize_session.py) extends
them.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from fedanon.errors import FedanonError
from fedanon.federation.exclusion import attempt_binding
from fedanon.party.errors import NotExpected, ProtocolError
from fedanon.party.records import Batches, table_batches
from fedanon.party.replay import AnswerOnce
from fedanon.party.sums import SumProtocol
from fedanon.party.union import UnionRole
from fedanon.protos import fedanon_v1_pb2 as pb

if TYPE_CHECKING:  # pandas loads with a job that asks for a DataFrame, not with the daemon
    import pandas as pd


class SessionBase:
    """What every kind of session has: an id, a lease clock, traffic counters, the ref check.

    ``touch`` renews the lease (the session's leader, or in the ring its predecessor, was just
    heard); ``idle_for`` is how long ago that was, which the servicer compares with the lease.
    `kind` is the job kind (the ``OpenSessionRequest`` job field) whose handler serves it.
    """

    kind: ClassVar[str]
    #: Whether a restarted party can rejoin this kind's session by replay (party/rejoin.py).
    replays: ClassVar[bool] = False

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.opened_by: pb.OpenSessionRequest | None = None  # the handshake, sealed for rejoin
        self.ended = False
        self.last_seen = time.monotonic()
        self.bytes_received = 0
        self.bytes_sent = 0
        self.next_iteration = 0
        # The session's attempt (0: its first; a rerun without parties that dropped out is the
        # next one: party/exclusion.py); a message of another attempt is refused.
        self.attempt = 0

    def touch(self) -> None:
        self.last_seen = time.monotonic()

    def idle_for(self) -> float:
        return time.monotonic() - self.last_seen

    def check_ref(self, ref: pb.SessionRef, iteration: int | None = None) -> None:
        """Reject a message for another session, attempt or an unexpected iteration."""
        if ref.session_id != self.session_id:
            raise NotExpected(
                f"message for session {ref.session_id[:12]} but the open session is "
                f"{self.session_id[:12]}"
            )
        wrong = self.wrong_attempt(ref, "this message")
        if wrong is not None:
            raise NotExpected(wrong)
        want = self.next_iteration if iteration is None else iteration
        if ref.iteration != want:
            raise NotExpected(f"stale or out-of-order iteration {ref.iteration} (expected {want})")

    def wrong_attempt(self, ref: pb.SessionRef, what: str) -> str | None:
        """Why `what` (a phase) of another attempt than the session's is refused, or None:
        an earlier one is stale; only the leader's ``Rerun`` moves the session to the next."""
        if ref.attempt == self.attempt:
            return None
        kind = "stale" if ref.attempt < self.attempt else "ahead"
        return (
            f"{what}: attempt {ref.attempt} is {kind} (the session is at attempt "
            f"{self.attempt}; only the leader's rerun moves it)"
        )

    def request_limit(self, method: str) -> int | None:
        """The largest request of `method` this session's job can need, or None when the job
        does not bound it (the servicer then applies its fixed control limits)."""
        return None

    def close(self) -> None:
        """Mark the session ended (a message still in flight is refused) and release what it
        holds in the background; called once, at End or when a new session evicts it."""
        self.ended = True


class RingSession(SessionBase, ABC):
    """A session whose parties form a ring: secure sum, key sharing and the secure set union.

    `sums` is the secure-sum protocol the leader chose at the handshake (ring or pairwise); the
    servicer calls it without asking which one it is.
    """

    #: The columns this kind releases (set by each kind; the handshake reply names them).
    released_columns: list[str]
    #: Whether the session can move to a rerun's attempt (``rekey``; kinds that replay).
    reruns: ClassVar[bool] = False
    #: The hash chain of the iterations applied in this attempt (kinds that replay keep one;
    #: party/rejoin.py seals it).
    chain: bytes = b""

    def __init__(self, session_id: str, ring: list[str], me: str, sum_mode: int) -> None:
        if me not in ring:
            raise FedanonError(f"this party ('{me}') is not in the session's ring {ring}")
        super().__init__(session_id)
        self.ring = ring
        self.position = ring.index(me)
        self.sums = SumProtocol.chosen(sum_mode)
        self.union: UnionRole
        self.answers = AnswerOnce(me)  # retried Sum and Union hops get the first answer
        # The union's round once a lost party made the leader restart it (party/rejoin.py);
        # None: the round after the last secure sum, as the protocol has it.
        self.union_round: int | None = None
        # Hears (iterations applied, their chain) before an answer leaves: rejoin seals it.
        self.on_applied: Callable[[int, bytes], None] | None = None

    @property
    def successor(self) -> str | None:
        """The next party in the ring, or None for the last one (which answers the leader)."""
        return self.ring[self.position + 1] if self.position + 1 < len(self.ring) else None

    @property
    def predecessor(self) -> str | None:
        """The previous party in the ring, or None for the first one (called by the leader)."""
        return self.ring[self.position - 1] if self.position > 0 else None

    @property
    def rerunning(self) -> bool:
        """Whether the session is in a rerun's attempt (the leader's ``Rerun`` was accepted:
        party/exclusion.py): its ring is a roster only, the route of the configured next hops
        broken, so this party forwards nothing; only then may a prefix probe or adoption come."""
        return self.attempt > 0

    @property
    def binding(self) -> bytes:
        """What the union's keys and contexts of this attempt are bound to (the session id
        for the first attempt: federation/exclusion.py's ``attempt_binding``)."""
        return attempt_binding(self.session_id, self.attempt, self.ring)

    def rekey(self, attempt: int, ring: list[str], me: str) -> None:
        """Move to `attempt` among `ring` (a rerun without parties that dropped out, checked
        by party/exclusion.py): the roster, no route, the sums from iteration 0 with masks of
        the new attempt, the union's route rebuilt from the survivors' keys of the session's
        key sharing, no answer or union of the last attempt kept."""
        if not self.reruns:
            raise FedanonError(f"a {self.kind} session cannot rerun")
        self.attempt = attempt
        self.ring = ring
        self.position = ring.index(me)
        self.next_iteration = 0
        self.union_round = None
        self.answers = AnswerOnce(me)
        self.union.restart()
        self.union.rekey(ring)
        self.sums.rekey(self, me)

    @abstractmethod
    def sum_request_limit(self) -> int:
        """The largest ``SumRequest`` the next iteration can need, from this session's state."""

    @abstractmethod
    def contribution(self, request: pb.SumRequest) -> np.ndarray:
        """The secure sum's input for `request`: this party's local statistics vector."""

    @abstractmethod
    def release_table(self, suppressed: list[int] | None = None) -> pd.DataFrame:
        """What this party contributes to the secure set union."""

    def released_batches(self, suppressed: list[int] | None = None) -> Batches:
        """The release batch by batch for the union (party/records.py): here the whole
        `release_table`, made once; a counting engine's session reads it shard by shard."""
        return table_batches(self.release_table(suppressed))

    def request_limit(self, method: str) -> int | None:
        return self.sum_request_limit() if method == "Sum" else None

    def restart_union(self, round_: int) -> None:
        """Start the union again as `round_` (a later round than any before: the replay cache
        and every union context then see new messages)."""
        if self.next_iteration == 0 or round_ <= (self.union_round or self.next_iteration):
            raise NotExpected(f"union round {round_} is not after the current one")
        self.union_round = round_
        self.union.restart()

    def replay(
        self,
        instructions: list[pb.Instruction],
        answered: tuple[int, bytes],
        probe: pb.PrefixProbe | None = None,
        adopt: pb.PrefixAdopt | None = None,
    ) -> None:
        """Rejoin by replay (party/rejoin.py): run the secure sums' local steps of iterations
        0..len(`instructions`) again (after a rerun's `probe` and `adopt`ion, if it resumed
        from a prefix), without answering any, checked against what the party had `answered`
        (count, chain) before it restarted; only kinds with `replays` can."""
        raise FedanonError(f"a {self.kind} session cannot rejoin by replay")

    def close(self) -> None:
        super().close()
        union: UnionRole | None = getattr(self, "union", None)  # None: the ring was not joined
        if union is not None:
            union.stop_preparing()
            union.stop_stripping()


def carries_nothing(request: pb.SumRequest, title: str) -> None:
    """Refuse a sum of a kind whose vector no message of the leader shapes (`title`: the
    kind): an instruction or an LKC rerun's prefix there is a deviation, refused in one line
    rather than ignored."""
    for name in ("instruction", "prefix_probe", "prefix_adopt"):
        if request.HasField(name):
            raise ProtocolError(f"a {title} sum carries no {name.replace('_', ' ')}")


class PendingVectorSession(RingSession, ABC):
    """A ring session whose own step leaves one vector for the round's secure sum (the c45 and
    kactus kinds): the next Sum takes it once, and may be as large as it."""

    #: What a Sum without a waiting vector is told, and the kind a Sum's instruction is refused for.
    NOTHING_PENDING: ClassVar[str]
    TITLE: ClassVar[str]

    pending: np.ndarray | None = None  # the step's vector, until its Sum

    def sum_request_limit(self) -> int:
        """The waiting vector (8 bytes a value) plus 64 KiB for the rest of the message."""
        return 8 * (0 if self.pending is None else self.pending.size) + (1 << 16)

    def contribution(self, request: pb.SumRequest) -> np.ndarray:
        """The secure sum's input: the vector this iteration's step left (no instruction)."""
        self.check_ref(request.ref)
        if self.pending is None:
            raise NotExpected(self.NOTHING_PENDING)
        carries_nothing(request, self.TITLE)
        vector, self.pending = self.pending, None
        return vector
