"""The party daemon's gRPC servicer.

Serves sessions one at a time. Before a handler runs, the gate (:mod:`fedanon.party.gate`) has
checked
the caller's certificate and the request's size against ``expected_peers`` and
``request_limit`` below. Every handler then checks who is calling (the leader, or in the ring
the previous party: name AND role from the mutual-TLS certificate), then the session id and
iteration. Errors end the call with a status whose message starts with ``party NAME:`` so the
leader can name the party at fault even when the failure happened several hops down the ring.

Session lifecycle: a session holds a lease that every message of its leader renews (the leader
also sends ``Renew`` heartbeats while it computes). A second ``OpenSession`` is refused while the
lease runs, and the refusal changes nothing; only a session whose lease lapsed (its leader died
or was cut off) is evicted for a new one. Refusals of messages that are not the open session's
own (wrong caller, wrong session, busy) change no state: only the open session's failures and
lifecycle events are recorded as ``Status``'s last error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import NoReturn, TypeVar, cast

import grpc
import numpy as np
import pandas as pd
from cryptography import x509

from fedanon.crypto.errors import CryptoError, IdentityError
from fedanon.crypto.identity import Identity, PeerIdentity
from fedanon.crypto.keyshare import ONION_UNION, PAIRWISE_SUM
from fedanon.crypto.pairwise import PairwiseMasker
from fedanon.crypto.secure_sum import add_vector
from fedanon.crypto.tls import peer_identity
from fedanon.errors import FedanonError
from fedanon.federation.keyshares import new_share, union_route, verified_peers
from fedanon.federation.lkc_job import lkc_job_from_proto
from fedanon.federation.wire import from_vector
from fedanon.fingerprint import fingerprint
from fedanon.party import randomize as randomize_job
from fedanon.party.config import PartyConfig
from fedanon.party.drbt_session import DRBTSession
from fedanon.party.policy import admit, audit_served
from fedanon.party.randomize import RandomizeSession
from fedanon.party.session import PartySession, ProtocolError
from fedanon.party.union import UnionRole, serve_union
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from fedanon.taxonomy.files import TaxonomyFile

log = logging.getLogger(__name__)

ForwardStub = Callable[[], pb_grpc.PartyStub]
# Session kinds that run the ring protocol: secure sum, key sharing and the secure set union.
RING_SESSIONS = (PartySession, RandomizeSession)
RingSession = PartySession | RandomizeSession
# What the servicer's one session slot can hold; handlers narrow it with `_of_kind`/`_ring`.
OpenSession = PartySession | RandomizeSession | DRBTSession
Kind = TypeVar("Kind", PartySession, RandomizeSession, DRBTSession)

# Largest request of each method that does not grow with the data (job spec, key shares with
# their certificates, session references); methods missing here are bounded by the job
# (``request_limit``) or only by the server's max_message_mb.
CONTROL_LIMITS = {
    "OpenSession": 1 << 20,
    "ShareKeys": 1 << 20,
    "Sum": 1 << 16,  # without an open LKC or randomize session
    "Assign": 1 << 16,  # without an open DRBT session
    "Project": 1 << 16,
    "Renew": 1 << 16,
    "End": 1 << 16,
    "Status": 1 << 16,
}


def _abort(context: grpc.ServicerContext, code: grpc.StatusCode, text: str) -> NoReturn:
    """End the call; ``abort`` always raises, and saying so lets the checker narrow after it."""
    context.abort(code, text)
    raise AssertionError("grpc.ServicerContext.abort returned")


class PartyServicer(pb_grpc.PartyServicer):
    """Holds the private table and at most one session."""

    def __init__(
        self,
        config: PartyConfig,
        table: pd.DataFrame,
        taxonomy: TaxonomyFile | None,
        next_stub: ForwardStub | None,
        identity: Identity | None,
        ca_certificate: x509.Certificate | None,
    ) -> None:
        self.config = config
        self.table = table
        self.taxonomy = taxonomy
        self.next_stub = next_stub
        self.identity = identity
        self.ca_certificate = ca_certificate
        self.secure = identity is not None
        self.session: OpenSession | None = None
        self.lock = threading.Lock()
        self.last_error = ""
        self.sessions_served = 0
        self.max_message_bytes = int(config.max_message_mb * (1 << 20))

    # ----------------------------------------------------------------- helpers
    def _fail(self, context: grpc.ServicerContext, code: grpc.StatusCode, message: str) -> NoReturn:
        text = message if message.startswith("party ") else f"party {self.config.name}: {message}"
        self.last_error = text
        log.warning("%s", text)
        _abort(context, code, text)

    def refuse(
        self, context: grpc.ServicerContext, code: grpc.StatusCode, message: str
    ) -> NoReturn:
        """End a call that is not the open session's business: one log line, no state change."""
        text = f"party {self.config.name}: {message}"
        log.warning("%s", text)
        _abort(context, code, text)

    def _identity(self, name: str) -> PeerIdentity:
        """The certificate a federation member called `name` must present (name AND role)."""
        return PeerIdentity(name, "leader" if name == self.config.leader else "party")

    def expected_peers(self, method: str) -> set[PeerIdentity]:
        """Who may reach a handler at all right now (the gate's check; handlers narrow it).

        The leader; the open ring session's predecessor (which forwards the ring's messages);
        for ``Status`` also this party's own operator.
        """
        peers = {self._identity(self.config.leader)}
        session = self.session
        if isinstance(session, RING_SESSIONS) and session.predecessor is not None:
            peers.add(self._identity(session.predecessor))
        if method == "Status":
            peers.add(self._identity(self.config.name))
        return peers

    def request_limit(self, method: str) -> int:
        """The largest request of `method` the open job can need (the gate refuses more)."""
        session = self.session
        sums = method == "Sum" and isinstance(session, RING_SESSIONS)
        marginals = method == "Randomize" and isinstance(session, RandomizeSession)
        if sums or marginals:
            limit = session.sum_request_limit()  # type: ignore[union-attr]
        elif method == "Assign" and isinstance(session, DRBTSession):
            limit = session.assign_request_limit()
        else:
            limit = CONTROL_LIMITS.get(method, self.max_message_bytes)
        return min(limit, self.max_message_bytes)

    def _authorize(self, context: grpc.ServicerContext, allowed: set[str | None]) -> None:
        if not self.secure:
            return
        try:
            caller = peer_identity(context)
        except IdentityError as exc:  # the gate refuses these first; never a traceback here
            self.refuse(
                context, grpc.StatusCode.UNAUTHENTICATED, f"malformed client certificate ({exc})"
            )
            return
        if caller not in {self._identity(name) for name in allowed if name is not None}:
            self.refuse(
                context,
                grpc.StatusCode.PERMISSION_DENIED,
                f"caller '{caller.name}' ({caller.role}) may not send this message",
            )

    def _current(self, context: grpc.ServicerContext, ref: pb.SessionRef) -> OpenSession:
        session = self.session
        if session is None:
            self.refuse(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"no open session (message for session {ref.session_id[:12]})",
            )
        assert session is not None
        if ref.session_id != session.session_id:
            self.refuse(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"message for session {ref.session_id[:12]} but the open session is another one",
            )
        return session

    def _forward_timeout(self, context: grpc.ServicerContext) -> float:
        """What is left of the caller's deadline (the leader sizes it per phase), or ours."""
        remaining = context.time_remaining()
        budget = self.config.rpc_seconds if remaining is None else remaining - 0.5
        return max(budget, 0.1)

    def _forward(
        self, method: str, request: object, context: grpc.ServicerContext, what: str
    ) -> object:
        """Call the next hop; retry with exponential backoff while it is unreachable.

        Only the next hop's own unavailability is retried, never an error it relays from
        further down the ring (those start with ``party NAME:``): retrying those re-ran the
        whole rest of the ring once per retry and then blamed this hop. Retrying is safe: a
        hop that did receive the message answers the copy with its first answer
        (party/replay.py).
        """
        next_stub = self.next_stub
        assert next_stub is not None, "only a party with a next hop forwards"
        deadline = time.monotonic() + self._forward_timeout(context)
        delay = self.config.backoff_seconds
        for attempt in range(self.config.connect_retries + 1):
            remaining = deadline - time.monotonic()
            try:
                return getattr(next_stub(), method)(request, timeout=max(remaining, 0.1))
            except grpc.RpcError as exc:
                relayed = (exc.details() or "").startswith("party ")
                retry = (
                    exc.code() == grpc.StatusCode.UNAVAILABLE
                    and not relayed
                    and attempt < self.config.connect_retries
                    and remaining > 2 * delay
                )
                if not retry:
                    self._forward_failed(context, exc, what)
                log.warning(
                    "next hop unavailable during %s, retrying in %.1f s",
                    what,
                    delay,
                    extra={
                        "phase": what,
                        "peer": self.config.next_hop.name if self.config.next_hop else None,
                    },
                )
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def _forward_failed(
        self, context: grpc.ServicerContext, exc: grpc.RpcError, what: str
    ) -> NoReturn:
        detail = exc.details() or str(exc.code())
        session = self.session
        successor = session.successor if isinstance(session, RING_SESSIONS) else "next hop"
        if not detail.startswith("party "):
            if exc.code() == grpc.StatusCode.UNAVAILABLE:
                detail = f"unreachable ({detail})"
            elif exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                detail = "no answer before the deadline"
            detail = f"party {successor}: {detail} (during {what}, forwarded by {self.config.name})"
        self._fail(context, exc.code(), detail)

    # ----------------------------------------------------------------- handlers
    def OpenSession(self, request: pb.OpenSessionRequest, context: grpc.ServicerContext):
        self._authorize(context, {self.config.leader})
        caller = peer_identity(context).name if self.secure else None
        job = admit(
            context,
            self.config.policy,
            request,
            self.config.name,
            self.config.leader,
            caller,
            list(self.table.columns),
        )
        with self.lock:
            busy = self.session
            if busy is not None and not busy.ended:
                silent = busy.idle_for()
                lease = self.config.lease_seconds
                if silent < lease:
                    self.refuse(
                        context,
                        grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"busy with another session (its leader was heard {silent:.1f} s "
                        f"ago; a new session may replace it only after its {lease:g} s "
                        "lease lapses)",
                    )
                # A live leader renews its lease; a lapsed one means the leader died or was cut
                # off (or this party missed its abort): the new session replaces it.
                self.last_error = (
                    f"session {busy.session_id[:12]} evicted by "
                    f"{request.ref.session_id[:12]}: its lease lapsed ({silent:.1f} "
                    f"s without a message from its leader)"
                )
                log.warning("%s", self.last_error, extra={"session": busy.session_id[:12]})
                self.session = None
            if request.WhichOneof("job") == "drbt":
                reply = self._open_drbt(request, context)
                audit_served(job, request.ref.session_id, caller)
                return reply
            if request.WhichOneof("job") == "randomize":
                reply = randomize_job.open_session(self, request, context)
                audit_served(job, request.ref.session_id, caller)
                return reply
            try:
                if request.WhichOneof("job") != "lkc":
                    raise FedanonError("unsupported job type")
                if self.taxonomy is None:
                    raise FedanonError("this party has no taxonomy configured (LKC jobs need one)")
                spec = lkc_job_from_proto(request.lkc)
                schema = spec.schema(self.taxonomy)
                ring = list(request.ring)
                session = PartySession(
                    request.ref.session_id,
                    spec,
                    schema,
                    self.table,
                    ring,
                    self.config.name,
                    request.sum_mode,
                )
                configured = self.config.next_hop.name if self.config.next_hop else None
                if session.successor is not None and session.successor != configured:
                    raise FedanonError(
                        f"ring says the next hop is '{session.successor}' but this party is "
                        f"configured to forward to '{configured}'"
                    )
            except (FedanonError, CryptoError) as exc:
                self._fail(context, grpc.StatusCode.FAILED_PRECONDITION, str(exc))
            sid = bytes.fromhex(session.session_id)
            private, share = new_share(self.identity, self.config.name, "party", sid, ONION_UNION)
            session.union = UnionRole(private, session.position, self.config.union_parallelism)
            shares = [share]
            if session.sum_mode == pb.SUM_MODE_PAIRWISE:
                session.pairwise_key, pairwise = new_share(
                    self.identity, self.config.name, "party", sid, PAIRWISE_SUM
                )
                shares.append(pairwise)
            self.session = session
            self.sessions_served += 1
            log.info(
                "session opened (ring position %d of %d)",
                session.position + 1,
                len(ring),
                extra={"session": session.session_id[:12], "iteration": 0},
            )
            audit_served(job, session.session_id, caller)
        items = spec.fingerprint_items(schema)
        reply = pb.OpenSessionReply(
            party=self.config.name,
            fingerprint=fingerprint(items),
            fingerprint_items=items,
            columns=session.released_columns,
            keys=shares,
            lease_seconds=self.config.lease_seconds,
        )
        session.bytes_received += request.ByteSize()
        session.bytes_sent += reply.ByteSize()
        return reply

    def _open_drbt(
        self, request: pb.OpenSessionRequest, context: grpc.ServicerContext
    ) -> pb.OpenSessionReply:
        """Open a DRBT session (caller holds the lock)."""
        try:
            session = DRBTSession(request.ref.session_id, request.drbt, self.table)
        except (FedanonError, CryptoError) as exc:
            self._fail(context, grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        self.session = session
        self.sessions_served += 1
        log.info(
            "DRBT session opened (%d attributes)",
            len(session.attributes),
            extra={"session": session.session_id[:12]},
        )
        items = session.fingerprint_items()
        reply = pb.OpenSessionReply(
            party=self.config.name,
            fingerprint=fingerprint(items),
            fingerprint_items=items,
            attributes=session.attributes,
            lease_seconds=self.config.lease_seconds,
        )
        session.bytes_received += request.ByteSize()
        session.bytes_sent += reply.ByteSize()
        return reply

    def _of_kind(self, context: grpc.ServicerContext, ref: pb.SessionRef, kind: type[Kind]) -> Kind:
        session = self._current(context, ref)
        if not isinstance(session, kind):
            self._not_kind(context, ref, kind.__name__)
        return session

    def _ring(self, context: grpc.ServicerContext, ref: pb.SessionRef) -> RingSession:
        session = self._current(context, ref)
        if not isinstance(session, RING_SESSIONS):
            self._not_kind(context, ref, " or ".join(k.__name__ for k in RING_SESSIONS))
        return session

    def _not_kind(self, context: grpc.ServicerContext, ref: pb.SessionRef, names: str) -> NoReturn:
        self.refuse(
            context,
            grpc.StatusCode.FAILED_PRECONDITION,
            f"session {ref.session_id[:12]} is not a {names} job",
        )

    def Ids(self, request: pb.IdsRequest, context: grpc.ServicerContext):
        self._authorize(context, {self.config.leader})
        session = self._of_kind(context, request.ref, DRBTSession)
        session.touch()
        session.bytes_received += request.ByteSize()
        if request.send_yours:
            reply = pb.IdsReply(ids=list(session.ids))
        else:
            try:
                reply = pb.IdsReply(missing=session.common_ids(list(request.ids)))
            except (FedanonError, CryptoError) as exc:
                self._fail(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        session.bytes_sent += reply.ByteSize()
        return reply

    def Project(self, request: pb.ProjectRequest, context: grpc.ServicerContext):
        self._authorize(context, {self.config.leader})
        session = self._of_kind(context, request.ref, DRBTSession)
        session.touch()
        try:
            block = session.project()
        except (FedanonError, CryptoError) as exc:
            self._fail(context, grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        data = np.ascontiguousarray(block, dtype="<f8")
        reply = pb.ProjectReply(
            block=pb.Matrix(
                data=data.tobytes(), rows=data.shape[0], cols=data.shape[1], dtype="<f8"
            )
        )
        session.bytes_sent += reply.ByteSize()
        return reply

    def Assign(self, request: pb.AssignRequest, context: grpc.ServicerContext):
        self._authorize(context, {self.config.leader})
        session = self._of_kind(context, request.ref, DRBTSession)
        session.touch()
        directory = self.config.output_dir or self.config.data.parent
        try:
            session.bytes_received += request.ByteSize()
            path = session.save_assignment(list(request.clusters), directory)
        except (FedanonError, CryptoError) as exc:
            self._fail(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        log.info(
            "cluster assignment written to %s", path, extra={"session": session.session_id[:12]}
        )
        return pb.AssignReply()

    def Randomize(self, request: pb.RandomizeRequest, context: grpc.ServicerContext):
        self._authorize(context, {self.config.leader})
        session = self._of_kind(context, request.ref, RandomizeSession)
        session.touch()
        return randomize_job.randomize(self, session, request, context)

    def ShareKeys(self, request: pb.ShareKeysRequest, context: grpc.ServicerContext):
        self._authorize(context, {self.config.leader})
        session = self._ring(context, request.ref)
        session.touch()
        sid = bytes.fromhex(session.session_id)
        try:
            session.union.route = union_route(request.keys, session.ring, sid, self.ca_certificate)
            if request.prepare_union:
                session.union.prepare(len(self.table))
            if session.sum_mode == pb.SUM_MODE_PAIRWISE:
                peers = verified_peers(request.keys, PAIRWISE_SUM, sid, self.ca_certificate)
                if session.pairwise_key is None:
                    raise ProtocolError("this party drew no pairwise key for the session")
                session.masker = PairwiseMasker(
                    self.config.name, session.pairwise_key, peers, session.ring, sid
                )
        except (FedanonError, CryptoError, ValueError) as exc:
            self._fail(context, grpc.StatusCode.PERMISSION_DENIED, f"key shares refused: {exc}")
        session.bytes_received += request.ByteSize()
        return pb.ShareKeysReply()

    def Sum(self, request: pb.SumRequest, context: grpc.ServicerContext):
        session = self._ring(context, request.ref)
        pairwise = session.sum_mode == pb.SUM_MODE_PAIRWISE
        first = pairwise or session.predecessor is None
        self._authorize(context, {self.config.leader} if first else {session.predecessor})
        session.touch()
        session.bytes_received += request.ByteSize()
        log.info(
            "secure sum",
            extra={"session": session.session_id[:12], "iteration": request.ref.iteration},
        )
        step = self._pairwise_sum if pairwise else self._ring_sum
        return session.answers.answer(
            "sum",
            request.ref.iteration,
            request,
            context,
            self._fail,
            lambda: step(session, request, context),
        )

    def _ring_sum(
        self, session: RingSession, request: pb.SumRequest, context: grpc.ServicerContext
    ) -> pb.SumReply:
        """Ring mode: add the local statistics and forward; the last party seals the total to
        the leader, so the parties relaying the reply cannot read it."""
        last = session.successor is None or self.next_stub is None
        try:
            if last and session.sealed_totals is None:
                session.sealed_totals = session.union.total_channel(
                    bytes.fromhex(session.session_id)
                )
            local = session.contribution(request)
            if request.partial.length != local.size:
                raise ProtocolError(
                    f"partial sum has {request.partial.length} elements, local statistics "
                    f"{local.size}"
                )
            from_vector(request.partial, local.size)
            partial = add_vector(request.partial.data, local)
        except (FedanonError, CryptoError, ValueError) as exc:
            code = (
                grpc.StatusCode.FAILED_PRECONDITION
                if isinstance(exc, ProtocolError)
                else grpc.StatusCode.INVALID_ARGUMENT
            )
            self._fail(context, code, str(exc))
        if last:
            assert session.sealed_totals is not None
            reply = pb.SumReply(
                sealed_total=session.sealed_totals.seal(request.ref.iteration, local.size, partial)
            )
        else:
            vector = pb.Vector(data=partial, length=local.size, dtype="<u8")
            forward = pb.SumRequest(ref=request.ref, partial=vector)
            if request.HasField("instruction"):
                forward.instruction.CopyFrom(request.instruction)
            session.bytes_sent += forward.ByteSize()
            reply = cast(
                pb.SumReply,
                self._forward("Sum", forward, context, f"iteration {request.ref.iteration}"),
            )
            session.bytes_received += reply.ByteSize()
        session.bytes_sent += reply.ByteSize()
        return reply

    def Union(self, request: pb.UnionRequest, context: grpc.ServicerContext):
        session = self._ring(context, request.ref)
        from_leader = request.phase != pb.UNION_PHASE_STRIP or session.predecessor is None
        self._authorize(context, {self.config.leader} if from_leader else {session.predecessor})
        session.touch()
        session.bytes_received += request.ByteSize()
        return session.answers.answer(
            f"union phase {int(request.phase)}/{int(request.fetch_phase)} step {request.step} "
            f"chunk {request.chunk}",
            request.ref.iteration,
            request,
            context,
            self._fail,
            lambda: serve_union(self, session, request, context),
        )

    def _pairwise_sum(
        self, session: RingSession, request: pb.SumRequest, context: grpc.ServicerContext
    ) -> pb.SumReply:
        """Pairwise mode: answer the leader directly with the pairwise-masked local vector."""
        try:
            if session.masker is None:
                raise ProtocolError("pairwise keys were not shared before the first sum")
            local = session.contribution(request)
            reply = pb.SumReply(
                pairwise_share=session.masker.masked_share(request.ref.iteration, local)
            )
        except (FedanonError, CryptoError, ValueError, RuntimeError) as exc:
            self._fail(context, grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        session.bytes_sent += reply.ByteSize()
        return reply

    def End(self, request: pb.EndRequest, context: grpc.ServicerContext):
        self._authorize(context, {self.config.leader})
        with self.lock:
            session = self.session
            if session is None or session.session_id != request.ref.session_id:
                return pb.EndReply()
            self.session = None
            if isinstance(session, RING_SESSIONS):
                session.union.stop_preparing()
            if request.abort:
                self.last_error = f"session {session.session_id[:12]} aborted: {request.reason}"
                log.warning("%s", self.last_error)
            else:
                log.info("session %s ended", session.session_id[:12])
            return pb.EndReply(bytes_sent=session.bytes_sent, bytes_received=session.bytes_received)

    def Renew(self, request: pb.RenewRequest, context: grpc.ServicerContext):
        """The leader's heartbeat: renew the session's lease while the leader computes."""
        self._authorize(context, {self.config.leader})
        session = self._current(context, request.ref)
        session.touch()
        return pb.RenewReply(lease_seconds=self.config.lease_seconds)

    def Status(self, request: pb.StatusRequest, context: grpc.ServicerContext):
        # The leader and this party's own operator (`fedanon party status` uses the party's
        # certificate); another hospital has no business knowing our session or last error.
        self._authorize(context, {self.config.leader, self.config.name})
        session = self.session
        return pb.StatusReply(
            party=self.config.name,
            session_id=session.session_id if session else "",
            iteration=session.next_iteration if session else 0,
            last_error=self.last_error,
            sessions_served=self.sessions_served,
        )
