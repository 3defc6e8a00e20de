"""The party daemon's gRPC servicer: a thin shell over one handler per job kind.

Serves sessions one at a time. Before a method runs, the gate (:mod:`fedanon.party.gate`) has
checked the caller's certificate and the request's size against ``expected_peers`` and
``request_limit`` below. Every method then checks who is calling (the leader, or in the ring
the previous party: name AND role from the mutual-TLS certificate), then the session id and
iteration. Errors end the call with a status whose message starts with ``party NAME:`` so the
leader can name the party at fault even when the failure happened several hops down the ring.

What the shell does for every job kind: authorization, the session slot and its lease, byte
counting, the handshake reply (one fingerprint helper), forwarding to the next hop, ``End``,
``Renew`` and ``Status``. What a job kind does is its handler's (party/handlers/, dispatched by
the ``OpenSessionRequest`` job field and, for the kind's own RPCs, by the open session's kind);
the ring protocol's ``ShareKeys``, ``Sum`` and ``Union`` are party/ring.py's, with the
secure-sum protocol (ring or pairwise) the session chose at the handshake (party/sums.py).

Session lifecycle: a session holds a lease that every message of its leader renews (the leader
also sends ``Renew`` heartbeats while it computes). A second ``OpenSession`` is refused while the
lease runs, and the refusal changes nothing; only a session whose lease lapsed (its leader died
or was cut off) is evicted for a new one, and only once the new one has opened. Refusals of
messages that are not the open session's next one (wrong caller, wrong session, busy, malformed,
stale, replayed or out of order: ``reject`` of a ``NotExpected``) and of handshakes (the policy's
admission check, or a handler that cannot open the job: audited) change no state: only the
open session's failures and lifecycle events are recorded as ``Status``'s last error
(docs/distributed.md, "Refusals and failures").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, cast

import grpc
from cryptography import x509

from fedanon.crypto.errors import CryptoError, IdentityError
from fedanon.crypto.identity import Identity, PeerIdentity
from fedanon.crypto.idle_keys import IdleKeyWorkers
from fedanon.crypto.tls import peer_identity
from fedanon.errors import FedanonError, one_line
from fedanon.federation.protocol import handshake_items, leader_version_difference
from fedanon.fingerprint import fingerprint
from fedanon.party import exclusion, rejoin, ring
from fedanon.party.config import PartyConfig
from fedanon.party.errors import NotExpected, status_of
from fedanon.party.handler import Admissions, JobHandler, KindTraits, closed_on_failure
from fedanon.party.handlers import HANDLERS, serving
from fedanon.party.policy import admit, audit_served, refuse_job
from fedanon.party.session_base import RingSession, SessionBase
from fedanon.party.session_store import SessionStore
from fedanon.party.shell import ForwardStub
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from fedanon.readers.sources import TableSource, as_source
from fedanon.taxonomy.files import TaxonomyFile

if TYPE_CHECKING:  # pandas loads with a job that asks for a DataFrame, not with the daemon
    import pandas as pd

    from fedanon.algorithms.tds.engines.base import CountingEngine

log = logging.getLogger(__name__)

# Largest request of each method that does not grow with the data (job spec, key shares with
# their certificates, session references); methods missing here are bounded by the job
# (``request_limit``) or only by the server's max_message_mb.
CONTROL_LIMITS = {
    "OpenSession": 1 << 20,
    "ShareKeys": 1 << 20,
    "Sum": 1 << 16,  # without an open ring session (which bounds it by its job)
    "Assign": 1 << 16,  # without an open DRBT session (idem)
    "Project": 1 << 16,
    "Renew": 1 << 16,
    "Rerun": 1 << 16,
    "End": 1 << 16,
    "Status": 1 << 16,
}


#: The longest wait between two tries to reach the next hop (docs/distributed.md, "Faults").
MAX_RETRY_DELAY = 1.0


def _sleep(seconds: float) -> bool:
    """Wait `seconds` (a next hop whose channel this servicer does not hold: no readiness)."""
    time.sleep(seconds)
    return False


def _abort(context: grpc.ServicerContext, code: grpc.StatusCode, text: str) -> NoReturn:
    """End the call; ``abort`` always raises, and saying so lets the checker narrow after it."""
    context.abort(code, text)
    raise AssertionError("grpc.ServicerContext.abort returned")


class PartyServicer(pb_grpc.PartyServicer):
    """Holds the private table and at most one session; `handlers` serve the job kinds."""

    def __init__(
        self,
        config: PartyConfig,
        table: pd.DataFrame | TableSource,
        taxonomy: TaxonomyFile | None,
        next_stub: ForwardStub | None,
        identity: Identity | None,
        ca_certificate: x509.Certificate | None,
        handlers: Mapping[str, JobHandler] = HANDLERS,
        counting: CountingEngine | None = None,
    ) -> None:
        self.config = config
        # Its table read as Arrow (a daemon), a frame (tests), or (a Dask-backed party) a source
        # the workers read: docs/engines.md.
        self.source: TableSource = as_source(table)
        self._table: pd.DataFrame | None = None
        self.counting = counting  # where LKC counting runs ([table]; None: in this process)
        self.taxonomy = taxonomy
        self.next_stub = next_stub
        # How a retry of the next hop waits (`_forward`): a plain sleep, or, where the daemon
        # holds the channel itself, until that channel is ready again (party/daemon.py).
        self.next_ready: Callable[[float], bool] = _sleep
        # The channel behind `next_stub` where the daemon made it (party/daemon.py): closed with
        # the servicer, so a server stopped in a longer-lived process leaves no channel open.
        self.next_channel: grpc.Channel | None = None
        self.identity = identity
        self.ca_certificate = ca_certificate
        self.secure = identity is not None
        self.handlers = handlers
        self.session: SessionBase | None = None
        self.lock = threading.Lock()
        self.last_error = ""
        self.sessions_served = 0
        self.key_sharings = 0  # ShareKeys accepted (Status: a rerun shares no keys again)
        # The last session its leader aborted here, and why (a later message for it is refused
        # naming the reason, e.g. that a rerun left this party out): (session id, reason).
        self.aborted: tuple[str, str] | None = None
        self.max_message_bytes = int(config.max_message_mb * (1 << 20))
        # Filled by the running daemon (`serve` starts it); in-process servicers leave it empty.
        self.idle_keys = IdleKeyWorkers(config.union_parallelism.workers, config.idle_keys)
        # The sealed session a restart can rejoin (party/rejoin.py): written at key sharing.
        self.store = SessionStore(
            config.state_dir, identity, config.lease_seconds, self._sealed_idle
        )

    def close(self) -> None:
        """Close what the servicer holds open beyond its calls (the next hop's channel); call
        once its server stopped."""
        if self.next_channel is not None:
            self.next_channel.close()
            self.next_channel = None

    def _sealed_idle(self, session_id: str) -> float | None:
        """How long the open session `session_id` has not heard its leader (None: not open
        here): the sealed file's lease clock (party/session_store.py)."""
        session = self.session
        if session is None or session.session_id != session_id or session.ended:
            return None
        return session.idle_for()

    @property
    def table(self) -> pd.DataFrame:
        """The whole table in this process (DRBT, randomization, LKC on the local engine): a
        Dask-backed party's Parquet dataset is read here only if such a job comes."""
        if self._table is None:
            self._table = self.source.frame()
        return self._table

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

    def reject(
        self,
        context: grpc.ServicerContext,
        exc: Exception,
        code: grpc.StatusCode | None = None,
        prefix: str = "",
    ) -> NoReturn:
        """End a call whose step raised `exc` (docs/distributed.md, "Refusals and failures").

        A message that is not the open session's next one (stale, replayed, out of order,
        after its end: `NotExpected`) is refused: the session is as it was and the genuine
        message can still come, so nothing is recorded. Any other error is the open session's
        failure (`code`, else the exception's status), recorded as ``Status``'s last error.
        """
        if isinstance(exc, NotExpected):
            self.refuse(context, status_of(exc), f"{prefix}{exc}")
        self._fail(context, code or status_of(exc), f"{prefix}{exc}")

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
        if isinstance(session, RingSession) and session.predecessor is not None:
            peers.add(self._identity(session.predecessor))
        sealed = self.store.pending if session is None else None
        if sealed is not None:  # a restarted party: the predecessor learns it awaits rejoin
            ring_names = list(sealed.open_request.ring)
            if self.config.name in ring_names and ring_names.index(self.config.name) > 0:
                peers.add(self._identity(ring_names[ring_names.index(self.config.name) - 1]))
        if method == "Status":
            peers.add(self._identity(self.config.name))
        return peers

    def request_limit(self, method: str) -> int:
        """The largest request of `method` the open job can need (the gate refuses more).

        A restarted party whose sealed session awaits its rejoin cannot bound its session's
        sums yet (that needs the replayed state): it lets them through to be refused as
        ``UNAVAILABLE`` (party/rejoin.py), which makes the leader rejoin it, where a size
        refusal would end the job."""
        session = self.session
        limit = None if session is None else session.request_limit(method)
        if session is None and method == "Sum" and self.store.pending is not None:
            limit = self.max_message_bytes
        if limit is None:
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

    def _current(self, context: grpc.ServicerContext, ref: pb.SessionRef, what: str) -> SessionBase:
        """The open session `ref` names, at `ref`'s attempt; `what` (the method) names the
        phase in a refusal."""
        session = self.session
        waiting = rejoin.awaiting(self, ref.session_id)
        if waiting is not None:  # to the leader and a relaying predecessor, still missing
            self.refuse(context, grpc.StatusCode.UNAVAILABLE, waiting)
        if session is None:
            self.refuse(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"no open session (message for session {ref.session_id[:12]}"
                f"{self.aborted_note(ref.session_id)})",
            )
        assert session is not None
        if ref.session_id != session.session_id:
            self.refuse(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"message for session {ref.session_id[:12]} but the open session is another "
                f"one{self.aborted_note(ref.session_id)}",
            )
        wrong = session.wrong_attempt(ref, what)
        if wrong is not None:
            self.refuse(context, grpc.StatusCode.FAILED_PRECONDITION, wrong)
        return session

    def aborted_note(self, session_id: str) -> str:
        """Why `session_id` is not open here if its leader aborted it ("" if not): a party a
        rerun left out, which comes back and answers or asks again, is told why in its line."""
        if self.aborted is None or self.aborted[0] != session_id:
            return ""
        return f"; its leader aborted it here: {self.aborted[1]}"

    def _forward_timeout(self, context: grpc.ServicerContext) -> float:
        """What is left of the caller's deadline (the leader sizes it per phase), or ours."""
        remaining = context.time_remaining()
        budget = self.config.rpc_seconds if remaining is None else remaining - 0.5
        return max(budget, 0.1)

    def _forward(
        self, method: str, request: object, context: grpc.ServicerContext, what: str
    ) -> object:
        """Call the next hop; retry with exponential backoff (at most ``MAX_RETRY_DELAY``
        apart) while it is unreachable, each wait ending early once the next hop's channel is
        ready again (`next_ready`): a hop that restarts is retried as soon as it listens.

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
                self.next_ready(delay)
                # Doubling, but never past MAX_RETRY_DELAY (or the configured first delay); the
                # wait itself ends once the hop listens again (`next_ready`: rejoin).
                delay = min(2 * delay, max(MAX_RETRY_DELAY, self.config.backoff_seconds))
        raise AssertionError("unreachable")

    def _forward_failed(
        self, context: grpc.ServicerContext, exc: grpc.RpcError, what: str
    ) -> NoReturn:
        detail = exc.details() or str(exc.code())
        session = self.session
        successor = session.successor if isinstance(session, RingSession) else "next hop"
        if not detail.startswith("party "):
            if exc.code() == grpc.StatusCode.UNAVAILABLE:
                detail = f"unreachable ({detail})"
            elif exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                detail = "no answer before the deadline"
            detail = f"party {successor}: {detail} (during {what}, forwarded by {self.config.name})"
        self._fail(context, exc.code(), detail)

    # ------------------------------------------------------------- RPC methods
    def OpenSession(
        self, request: pb.OpenSessionRequest, context: grpc.ServicerContext
    ) -> pb.OpenSessionReply:
        self._authorize(context, {self.config.leader})
        caller = peer_identity(context).name if self.secure else None
        other_release = leader_version_difference(request.versions)
        if other_release is not None:
            refuse_job(
                context,
                request,
                caller,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"party {self.config.name} refused the leader: {other_release}",
            )
        job = admit(
            context,
            self.config.policy,
            request,
            self.config.name,
            self.config.leader,
            caller,
            list(self.source.columns),
            Admissions(self.handlers),
        )
        with self.lock:
            busy = self.session
            silent = busy.idle_for() if busy is not None and not busy.ended else None
            lease = self.config.lease_seconds
            if busy is not None and silent is not None and silent < lease:
                self.refuse(
                    context,
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"busy with another session (its leader was heard {silent:.1f} s "
                    f"ago; a new session may replace it only after its {lease:g} s "
                    "lease lapses)",
                )
            handler = self.handlers.get(request.WhichOneof("job") or "")
            code = grpc.StatusCode.FAILED_PRECONDITION
            refusal: str | None = None
            try:
                if handler is None:
                    raise FedanonError("this daemon has no handler for the job kind")
                opened = handler.open(self, request)
                with closed_on_failure(opened.session):  # until it is the held session
                    self._install(opened.session, busy, silent, request)
            except (FedanonError, CryptoError) as exc:
                refusal = str(exc)
            except BaseException as exc:  # a bug (a handler's, an eviction's),
                # out of memory, or an interrupt on this worker thread (never the main one's):
                # refused in one line all the same, the party's state as the failure left it
                log.exception("handshake of session %s failed", request.ref.session_id[:12])
                code, refusal = grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}"
            if refusal is not None:
                # Refused like an invalid job: audited, and the held session stays (what the
                # handler built is closed: party/handler.py's ``closed_on_failure``).
                refusal = one_line(refusal)  # whatever the exception's text
                refuse_job(
                    context, request, caller, code, f"party {self.config.name} refused: {refusal}"
                )
            session = opened.session
            audit_served(job, session.session_id, caller)
        items = handshake_items(opened.fingerprint_items)
        reply = pb.OpenSessionReply(
            party=self.config.name,
            fingerprint=fingerprint(items),
            fingerprint_items=items,
            lease_seconds=self.config.lease_seconds,
        )
        reply.MergeFrom(opened.reply)
        session.bytes_received += request.ByteSize()
        session.bytes_sent += reply.ByteSize()
        return reply

    def _install(
        self,
        session: SessionBase,
        busy: SessionBase | None,
        silent: float | None,
        request: pb.OpenSessionRequest,
    ) -> None:
        """Make the just opened `session` the held one (under the lock), evicting `busy`,
        whose lease lapsed `silent` seconds ago (None: none is held).

        What can fail comes first and the session is held last: a step that raises leaves
        the party holding no session that did not open (an evicted one is gone, whatever its
        close raised), and the session is counted served only once held."""
        if busy is not None and silent is not None:
            # A live leader renews its lease; a lapsed one means the leader died or was cut
            # off (or this party missed its abort): the new session replaces it.
            self.last_error = (
                f"session {busy.session_id[:12]} evicted by "
                f"{request.ref.session_id[:12]}: its lease lapsed ({silent:.1f} "
                f"s without a message from its leader)"
            )
            log.warning("%s", self.last_error, extra={"session": busy.session_id[:12]})
            self.session = None
            busy.close()
        # A sealed session is given up: this party cannot tell whether its leader still
        # waits, and a stale file must never keep the daemon from new sessions.
        self.store.clear()
        self.idle_keys.busy()  # no key generation while a session runs
        session.opened_by = request
        self.session = session
        self.sessions_served += 1

    def _dispatch(self, method: str, request: Any, context: grpc.ServicerContext) -> Any:
        """A job kind's own RPC: the leader's, for the open session, served by its handler."""
        self._authorize(context, {self.config.leader})
        session = self._current(context, request.ref, method)
        step = self.handlers[session.kind].steps.get(method)
        if step is None:
            self._not_kind(context, request.ref, session, lambda kind: method in kind.steps)
        session.touch()
        return step(self, session, request, context)

    def _ring(self, context: grpc.ServicerContext, ref: pb.SessionRef, what: str) -> RingSession:
        session = self._current(context, ref, what)
        if not isinstance(session, RingSession):
            self._not_kind(context, ref, session, lambda kind: kind.ring)
        return session

    def _not_kind(
        self,
        context: grpc.ServicerContext,
        ref: pb.SessionRef,
        session: SessionBase,
        wanted: Callable[[KindTraits], bool],
    ) -> NoReturn:
        """Refuse a message of another kind than the open session's, in one line naming the
        kinds whose sessions serve it, from the registry: no kind's module is imported for
        a refusal (party/handlers/__init__.py)."""
        kinds = " or ".join(f"'{kind}'" for kind in serving(self.handlers, wanted))
        self.refuse(
            context,
            grpc.StatusCode.FAILED_PRECONDITION,
            f"session {ref.session_id[:12]} is a '{session.kind}' job, not a {kinds} one",
        )

    def Ids(self, request: pb.IdsRequest, context: grpc.ServicerContext) -> pb.IdsReply:
        return cast(pb.IdsReply, self._dispatch("Ids", request, context))

    def Project(self, request: pb.ProjectRequest, context: grpc.ServicerContext) -> pb.ProjectReply:
        return cast(pb.ProjectReply, self._dispatch("Project", request, context))

    def Assign(self, request: pb.AssignRequest, context: grpc.ServicerContext) -> pb.AssignReply:
        return cast(pb.AssignReply, self._dispatch("Assign", request, context))

    def Randomize(
        self, request: pb.RandomizeRequest, context: grpc.ServicerContext
    ) -> pb.RandomizeReply:
        return cast(pb.RandomizeReply, self._dispatch("Randomize", request, context))

    def C45Count(
        self, request: pb.C45CountRequest, context: grpc.ServicerContext
    ) -> pb.C45CountReply:
        return cast(pb.C45CountReply, self._dispatch("C45Count", request, context))

    def KactusStep(
        self, request: pb.KactusStepRequest, context: grpc.ServicerContext
    ) -> pb.KactusStepReply:
        return cast(pb.KactusStepReply, self._dispatch("KactusStep", request, context))

    def EvaluateClassify(
        self, request: pb.EvaluateClassifyRequest, context: grpc.ServicerContext
    ) -> pb.EvaluateClassifyReply:
        return cast(pb.EvaluateClassifyReply, self._dispatch("EvaluateClassify", request, context))

    def ShareKeys(
        self, request: pb.ShareKeysRequest, context: grpc.ServicerContext
    ) -> pb.ShareKeysReply:
        self._authorize(context, {self.config.leader})
        session = self._ring(context, request.ref, "key sharing")
        session.touch()
        reply = ring.share_keys(self, session, request, context)
        self.key_sharings += 1
        rejoin.seal(self, session, request)
        return reply

    def Rejoin(self, request: pb.RejoinRequest, context: grpc.ServicerContext) -> pb.RejoinReply:
        """The leader resumes this party in its session (party/rejoin.py)."""
        self._authorize(context, {self.config.leader})
        return rejoin.serve(self, request, context)

    def Rerun(
        self, request: pb.RekeyRerunRequest, context: grpc.ServicerContext
    ) -> pb.RekeyRerunReply:
        """The leader reruns the open session without parties that dropped out, as its next
        attempt (party/exclusion.py)."""
        self._authorize(context, {self.config.leader})
        exclusion.rerun(self, request, context)
        return pb.RekeyRerunReply(party=self.config.name)

    def Sum(self, request: pb.SumRequest, context: grpc.ServicerContext) -> pb.SumReply:
        session = self._ring(context, request.ref, f"secure sum, iteration {request.ref.iteration}")
        self._authorize(context, session.sums.callers(session.predecessor, self.config.leader))
        session.touch()
        return ring.secure_sum(self, session, request, context)

    def Union(self, request: pb.UnionRequest, context: grpc.ServicerContext) -> pb.UnionReply:
        session = self._ring(context, request.ref, "union")
        # A resumed strip (`forward_kept`) comes from the leader to the hop before a party
        # that rejoined; every other STRIP from the predecessor (the first hop's: the leader).
        from_leader = (
            request.phase != pb.UNION_PHASE_STRIP
            or session.predecessor is None
            or request.forward_kept
        )
        self._authorize(context, {self.config.leader} if from_leader else {session.predecessor})
        session.touch()
        session.bytes_received += request.ByteSize()
        return session.answers.answer(
            f"union phase {int(request.phase)}/{int(request.fetch_phase)} step {request.step} "
            f"chunk {request.chunk}{' kept' if request.forward_kept else ''}",
            request.ref.iteration,
            request,
            context,
            self.refuse,
            lambda: ring.serve_union(self, session, request, context),
        )

    def End(self, request: pb.EndRequest, context: grpc.ServicerContext) -> pb.EndReply:
        """End (or abort) the session: its state closed, its sealed file deleted. An end of
        an earlier attempt than the session's is stale and changes nothing; one of a later
        attempt is the leader's: a party a rerun left out (leader/exclusion.py) is told so
        with the attempt it was excluded from, which it may never have reached."""
        self._authorize(context, {self.config.leader})
        with self.lock:
            session = self.session
            ref = request.ref
            held = self._attempt_held(ref.session_id)
            if held is not None and ref.attempt < held:
                self.refuse(
                    context,
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"end of session {ref.session_id[:12]}: attempt {ref.attempt} is "
                    f"stale (the session is at attempt {held})",
                )
            self.store.clear(ref.session_id)
            # one line of printable text, whatever the leader's text (no control character
            # reaches the log, Status or a later refusal)
            reason = one_line(" ".join(request.reason.split()))[:500]
            if request.abort and held is not None:  # open here, or sealed after a restart
                self.aborted = (ref.session_id, reason)
            if session is None or session.session_id != ref.session_id:
                return pb.EndReply()
            self.session = None
            session.close()
            self.idle_keys.idle()
            if request.abort:
                self.last_error = f"session {session.session_id[:12]} aborted: {reason}"
                log.warning("%s", self.last_error)
            else:
                log.info("session %s ended", session.session_id[:12])
            return pb.EndReply(bytes_sent=session.bytes_sent, bytes_received=session.bytes_received)

    def _attempt_held(self, session_id: str) -> int | None:
        """The attempt this party holds session `session_id` at: open here, or sealed and
        awaiting its rejoin after a restart (None: neither). A stale ``End`` of an earlier
        attempt must not end it, nor delete its sealed file, in either state."""
        session = self.session
        if session is not None and session.session_id == session_id:
            return session.attempt
        sealed = self.store.state
        if sealed is not None and sealed.session_id == session_id:
            return sealed.attempt
        return None

    def Renew(self, request: pb.RenewRequest, context: grpc.ServicerContext) -> pb.RenewReply:
        """The leader's heartbeat: renew the session's lease while the leader computes."""
        self._authorize(context, {self.config.leader})
        session = self._current(context, request.ref, "lease renewal")
        session.touch()
        return pb.RenewReply(lease_seconds=self.config.lease_seconds)

    def Status(self, request: pb.StatusRequest, context: grpc.ServicerContext) -> pb.StatusReply:
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
            attempt=session.attempt if session else 0,
            key_sharings=self.key_sharings,
            lease_left_seconds=self._lease_left(session),
        )

    def _lease_left(self, session: SessionBase | None) -> float:
        """Seconds until `session`'s lease lapses: while positive the handshake refuses a new
        job as busy (the same test as there), so `Status` reports it for a waiter to see."""
        if session is None or session.ended:
            return 0.0
        return max(0.0, self.config.lease_seconds - session.idle_for())
