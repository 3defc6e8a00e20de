"""The party's half of the secure sum: one interface, a ring and a pairwise implementation.

A ring session picks its protocol once, at the handshake, from the job's ``sum_mode``; the
servicer then asks it who may send the session's ``Sum``, what key shares it needs and how to
answer, and never which protocol it is.

* Ring (the paper's protocol): the first party is called by the leader, every other one by its
  predecessor; each adds its local statistics to the masked partial and forwards it; the last
  party seals the total to the leader (crypto/sealed_total.py), so the parties relaying the
  reply cannot read it.
* Pairwise (collusion-resistant): every party is called by the leader and answers it directly
  with its local vector under pairwise masks that cancel in the sum (crypto/pairwise.py); the
  pairwise keys are drawn at the handshake and verified at ``ShareKeys``. The sparse variant
  (``sum_mode = "sparse"``) masks with 2*ceil(log2 n) neighbours instead of every other party.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar, Protocol, cast

import grpc
import numpy as np
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.errors import CryptoError
from fedanon.crypto.identity import Identity
from fedanon.crypto.keyshare import PAIRWISE_SUM, PeerKey
from fedanon.crypto.pairwise import PairwiseMasker
from fedanon.crypto.sealed_total import SealedTotalChannel
from fedanon.crypto.secure_sum import add_vector
from fedanon.errors import FedanonError
from fedanon.federation.keyshares import new_share, verified_peers
from fedanon.federation.wire import from_vector
from fedanon.party.errors import NotExpected, ProtocolError
from fedanon.party.shell import PartyShell
from fedanon.party.union import UnionRole
from fedanon.protos import fedanon_v1_pb2 as pb


class RingSession(Protocol):
    """What a secure-sum protocol uses of the ring session it serves (party/session_base.py's
    ``RingSession``, which holds the protocol: a protocol here, not that class, so that neither
    module imports the other)."""

    session_id: str
    ring: list[str]
    attempt: int
    union: UnionRole
    bytes_sent: int
    bytes_received: int

    @property
    def successor(self) -> str | None: ...

    def contribution(self, request: pb.SumRequest) -> np.ndarray: ...


class SumProtocol(ABC):
    """How the parties of one ring session add their statistics for the leader."""

    #: This party's private key for the sum, sealed for rejoin (party/session_store.py).
    key: X25519PrivateKey | None = None
    #: Whether a rerun without parties that dropped out can run on it (no route needed).
    reruns: ClassVar[bool] = False

    @staticmethod
    def chosen(sum_mode: int) -> SumProtocol:
        """The protocol the job's ``sum_mode`` names (ring unless it asks for pairwise)."""
        if sum_mode in (pb.SUM_MODE_PAIRWISE, pb.SUM_MODE_PAIRWISE_SPARSE):
            return PairwiseSum(sparse=sum_mode == pb.SUM_MODE_PAIRWISE_SPARSE)
        return RingSum()

    def key_shares(
        self, identity: Identity | None, me: str, session_id: bytes
    ) -> list[pb.KeyShare]:
        """The key shares this party hands the leader at the handshake for the sum (none by
        default: the ring's mask needs no key, its total is sealed with the union keys)."""
        return []

    def accept_keys(  # noqa: B027 - deliberately empty: a protocol without sum keys ignores them
        self,
        keys: Sequence[pb.KeyShare],
        session: RingSession,
        me: str,
        ca: x509.Certificate | None,
    ) -> None:
        """Take the federation's verified key shares (``ShareKeys``) before the first sum."""

    def rekey(self, session: RingSession, me: str) -> None:
        """Mask a rerun's sums among `session`'s roster, bound to its attempt (only protocols
        that `reruns`)."""
        raise ProtocolError("a rerun without excluded parties needs the pairwise sum")

    @abstractmethod
    def callers(self, predecessor: str | None, leader: str) -> set[str | None]:
        """Who may send this party the session's ``Sum``."""

    @abstractmethod
    def add(
        self,
        shell: PartyShell,
        session: RingSession,
        request: pb.SumRequest,
        context: grpc.ServicerContext,
    ) -> pb.SumReply:
        """Answer one ``Sum`` (the servicer has authorized it and answers its retries)."""


class RingSum(SumProtocol):
    """Add the local statistics and forward; the last party seals the total to the leader."""

    def __init__(self) -> None:
        self.sealed_totals: SealedTotalChannel | None = None  # the last party's
        # The last iteration's (iteration, instruction bytes) and local vector: the leader's
        # resent sum after a party further down rejoined is forwarded with the same vector
        # (its instruction is applied once).
        self._last: tuple[tuple[int, bytes], np.ndarray] | None = None

    def _local(self, session: RingSession, request: pb.SumRequest) -> np.ndarray:
        """The local vector for `request`: the last one again for a resent iteration."""
        instruction = request.instruction if request.HasField("instruction") else None
        key = (
            request.ref.iteration,
            b"" if instruction is None else instruction.SerializeToString(deterministic=True),
        )
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        local = session.contribution(request)
        self._last = (key, local)
        return local

    def callers(self, predecessor: str | None, leader: str) -> set[str | None]:
        return {leader} if predecessor is None else {predecessor}

    def add(
        self,
        shell: PartyShell,
        session: RingSession,
        request: pb.SumRequest,
        context: grpc.ServicerContext,
    ) -> pb.SumReply:
        last = session.successor is None or shell.next_stub is None
        try:
            if last and self.sealed_totals is None:
                self.sealed_totals = session.union.total_channel(bytes.fromhex(session.session_id))
            local = self._local(session, request)
            if request.partial.length != local.size:
                raise ProtocolError(
                    f"partial sum has {request.partial.length} elements, local statistics "
                    f"{local.size}"
                )
            from_vector(request.partial, local.size)
            partial = add_vector(request.partial.data, local)
        except (FedanonError, CryptoError, ValueError) as exc:
            shell.reject(context, exc)
        if last:
            assert self.sealed_totals is not None
            reply = pb.SumReply(
                sealed_total=self.sealed_totals.seal(request.ref.iteration, local.size, partial)
            )
        else:
            vector = pb.Vector(data=partial, length=local.size, dtype="<u8")
            forward = pb.SumRequest(ref=request.ref, partial=vector)
            if request.HasField("instruction"):
                forward.instruction.CopyFrom(request.instruction)
            session.bytes_sent += forward.ByteSize()
            reply = cast(
                pb.SumReply,
                shell._forward("Sum", forward, context, f"iteration {request.ref.iteration}"),
            )
            session.bytes_received += reply.ByteSize()
        session.bytes_sent += reply.ByteSize()
        return reply


class PairwiseSum(SumProtocol):
    """Answer the leader directly with the pairwise-masked local vector."""

    reruns = True

    def __init__(self, sparse: bool = False) -> None:
        """`sparse`: mask with the session's sparse neighbours only (crypto/pairwise.py)."""
        self.sparse = sparse
        self.key: X25519PrivateKey | None = None
        self.masker: PairwiseMasker | None = None
        self._peers: list[PeerKey] = []  # the session's verified pairwise keys (a rerun's)

    def key_shares(
        self, identity: Identity | None, me: str, session_id: bytes
    ) -> list[pb.KeyShare]:
        self.key, share = new_share(identity, me, "party", session_id, PAIRWISE_SUM)
        return [share]

    def accept_keys(
        self,
        keys: Sequence[pb.KeyShare],
        session: RingSession,
        me: str,
        ca: x509.Certificate | None,
    ) -> None:
        sid = bytes.fromhex(session.session_id)
        peers = verified_peers(keys, PAIRWISE_SUM, sid, ca)
        if self.key is None:
            raise ProtocolError("this party drew no pairwise key for the session")
        self.masker = PairwiseMasker(me, self.key, peers, session.ring, sid, self.sparse)
        self._peers = peers

    def rekey(self, session: RingSession, me: str) -> None:
        """The same pair secrets, masks bound to the rerun's attempt and roster (its sparse
        graph drawn over the survivors): no key is drawn or shared again."""
        if self.key is None or self.masker is None:
            raise NotExpected("pairwise keys were not shared before the rerun")
        kept = [peer for peer in self._peers if peer.name in session.ring]
        sid = bytes.fromhex(session.session_id)
        self.masker = PairwiseMasker(
            me, self.key, kept, session.ring, sid, self.sparse, session.attempt
        )

    def callers(self, predecessor: str | None, leader: str) -> set[str | None]:
        return {leader}

    def add(
        self,
        shell: PartyShell,
        session: RingSession,
        request: pb.SumRequest,
        context: grpc.ServicerContext,
    ) -> pb.SumReply:
        try:
            if self.masker is None:
                raise NotExpected("pairwise keys were not shared before the first sum")
            local = session.contribution(request)
            reply = pb.SumReply(
                pairwise_share=self.masker.masked_share(request.ref.iteration, local)
            )
        except (FedanonError, CryptoError, ValueError, RuntimeError) as exc:
            shell.reject(context, exc, grpc.StatusCode.FAILED_PRECONDITION)
        session.bytes_sent += reply.ByteSize()
        return reply
