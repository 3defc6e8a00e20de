"""``transport = "outbound"``: the party dials the leader's relay and listens on no port.

The daemon opens one mutually authenticated stream to the relay (``relay`` in party.toml; the
relay must present the certificate of this party's ``leader``) and keeps it: keepalive pings
notice a dead path, and a broken stream is redialled with exponential backoff (from
``backoff_seconds``, at most ``MAX_BACKOFF_SECONDS``). Over the stream (federation/tunnel.py):

- the leader's calls are served by the same gate and servicer as in direct mode, with the
  leader's certificate (checked against the CA and the configured leader name) as the caller;
- the ring predecessor's calls arrive sealed end to end (federation/relay_crypto.py): the
  handshake verifies the predecessor's certificate, which is then the caller the gate and
  servicer authorize; a frame that fails to open (tampered, replayed, misrouted) is refused
  with a ``relayed frame refused: ...`` status before the servicer sees it;
- this party's own forward to its next hop (the servicer's ``next_stub``) is sealed the same
  way and sent to the relay addressed to the next hop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import grpc
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.errors import CryptoError
from fedanon.crypto.identity import Identity, certificate_pem, verify_certificate
from fedanon.crypto.tls import secure_channel
from fedanon.errors import FedanonError
from fedanon.federation import relay_crypto
from fedanon.federation.relay_crypto import HopKeys
from fedanon.federation.transport import MAX_MESSAGE_BYTES
from fedanon.federation.tunnel import (
    KEEPALIVE_OPTIONS,
    MAX_BACKOFF_SECONDS,
    Endpoint,
    LocalService,
    TunnelChannel,
    TunnelContext,
    TunnelError,
    reply_error,
)
from fedanon.party.config import PartyConfig
from fedanon.party.daemon import (
    build_servicer,
    close_workers,
    start_workers,
    stop_on_signals,
    tie_to_parent,
    wait_for,
)
from fedanon.party.gate import PartyGate
from fedanon.party.servicer import PartyServicer
from fedanon.party.session_base import RingSession
from fedanon.party.session_store import holding_state_dir
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

HANDSHAKE = "hop-handshake"
#: Calls served at once (the direct server's worker count).
WORKERS = 8


class OutboundParty:
    """One party daemon's tunnel to the relay: serves what comes in, seals its ring hops."""

    def __init__(self, servicer: PartyServicer, identity: Identity, ca: x509.Certificate) -> None:
        self.servicer = servicer
        self.config = servicer.config
        self.identity, self.ca = identity, ca
        self.local = LocalService(
            "fedanon.v1.Party",
            lambda s: pb_grpc.add_PartyServicer_to_server(servicer, s),
            [PartyGate(servicer)],
        )
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="tunnel-call")
        self.endpoint = Endpoint("the relay")
        self.endpoint.close()  # until the first connection
        self.leader_pem: bytes | None = None
        self.connected = threading.Event()
        self.incoming: dict[tuple[str, str], HopKeys] = {}
        self.outgoing: dict[tuple[str, str], HopKeys] = {}
        self.keys_lock = threading.Lock()
        self.handshake_lock = threading.Lock()  # one hop handshake at a time, not under keys_lock

    # ------------------------------------------------------------------ connection
    def run(self, stop: threading.Event) -> None:
        """Stay connected to the relay until `stop` is set, redialling with backoff."""
        delay = self.config.backoff_seconds

        def close_on_stop() -> None:  # ends the stream (its request iterator) on SIGTERM
            stop.wait()
            self.endpoint.close()

        threading.Thread(target=close_on_stop, name="relay-stop", daemon=True).start()
        while not stop.is_set():
            began = time.monotonic()
            try:
                self._connect_once(stop)
            except grpc.RpcError as exc:
                log.warning("relay %s: %s", self.config.relay, exc.details() or exc.code().name)
            except (FedanonError, CryptoError, ValueError) as exc:  # e.g. not the leader
                log.warning("relay %s refused: %s", self.config.relay, exc)
            if time.monotonic() - began > 10 * MAX_BACKOFF_SECONDS:
                delay = self.config.backoff_seconds  # it was up a while: start over
            if stop.wait(delay):
                break
            delay = min(delay * 2, MAX_BACKOFF_SECONDS)
        self.pool.shutdown(wait=False, cancel_futures=True)

    def _connect_once(self, stop: threading.Event) -> None:
        tls = self.config.tls
        assert tls is not None and self.config.relay is not None
        channel = secure_channel(
            self.config.relay,
            self.identity,
            self.ca,
            self.config.leader,
            options=[
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                *KEEPALIVE_OPTIONS,
            ],
        )
        endpoint = Endpoint("the relay")
        self.endpoint = endpoint
        if stop.is_set():
            endpoint.close()
        try:
            frames = pb_grpc.RelayStub(channel).Connect(endpoint.outgoing())
            for frame in frames:
                kind = frame.WhichOneof("kind")
                if kind == "hello_certificate":
                    self._hello(frame.hello_certificate)
                    self.connected.set()
                    print(
                        f"party {self.config.name} connected to relay {self.config.relay}",
                        flush=True,
                    )
                elif kind == "reply":
                    endpoint.deliver(frame.reply)
                elif kind == "call" and self.leader_pem is not None:
                    self.pool.submit(self._serve, endpoint, frame.call)
        finally:
            self.connected.clear()
            endpoint.close()
            channel.close()

    def _hello(self, certificate_der: bytes) -> None:
        """The relay's certificate must be the configured leader's, from the federation CA."""
        certificate = x509.load_der_x509_certificate(certificate_der)
        verify_certificate(certificate, self.ca, self.config.leader, "leader")
        self.leader_pem = certificate_pem(certificate)

    # ------------------------------------------------------------------ calls in
    def _serve(self, endpoint: Endpoint, call: pb.TunnelCall) -> None:
        try:
            if call.method == HANDSHAKE:
                reply = self._answer_handshake(call)
            elif call.HasField("hop"):
                reply = self._serve_hop(call)
            elif call.peer:  # from a party, not sealed: it could pose as the leader
                reply = _failure(
                    self.config.name,
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"relayed frame refused: a call from party '{call.peer}' must be sealed",
                )
            else:
                context = TunnelContext(self.leader_pem, call.timeout_seconds)
                reply = self.local.call(call.method, call.request, context)
        except CryptoError as exc:
            reply = _refused(self.config.name, exc)
        except Exception:  # a bug: answered (the caller must not wait out its deadline), logged
            log.exception("tunnelled %s failed", call.method)
            reply = _failure(self.config.name, grpc.StatusCode.INTERNAL, f"{call.method} failed")
        reply.call_id = call.call_id
        endpoint.send(pb.TunnelFrame(reply=reply))

    def _answer_handshake(self, call: pb.TunnelCall) -> pb.TunnelReply:
        session = self.servicer.session
        if not isinstance(session, RingSession) or session.predecessor is None:
            return _failure(
                self.config.name, grpc.StatusCode.FAILED_PRECONDITION, "no ring session takes hops"
            )
        keys, answer = relay_crypto.answer(
            self.identity, self.ca, session.session_id, session.predecessor, call.request
        )
        keys.caller_certificate = certificate_pem(
            x509.load_der_x509_certificate(keys.caller_certificate)
        )
        with self.keys_lock:
            self.incoming = {k: v for k, v in self.incoming.items() if k[0] == keys.session_id}
            self.incoming[(keys.session_id, keys.sender)] = keys
        return pb.TunnelReply(reply=answer)

    def _serve_hop(self, call: pb.TunnelCall) -> pb.TunnelReply:
        with self.keys_lock:
            keys = self.incoming.get((call.hop.session_id, call.peer))
        if keys is None:
            return _failure(
                self.config.name,
                grpc.StatusCode.PERMISSION_DENIED,
                f"relayed frame refused: no hop keys with '{call.peer}' for session "
                f"{call.hop.session_id[:12]} (misrouted?)",
            )
        plain = keys.open_request(call.method, call.hop, call.request)
        context = TunnelContext(keys.caller_certificate, call.timeout_seconds)
        reply = self.local.call(call.method, plain, context)
        return pb.TunnelReply(reply=keys.seal_reply(call.method, call.hop, reply))

    # ------------------------------------------------------------------ calls out
    def next_hop_stub(self) -> pb_grpc.PartyStub:
        """The servicer's stub for its ring forward: sealed calls through the relay."""
        return pb_grpc.PartyStub(TunnelChannel(self._send_hop))

    def _send_hop(
        self, method: str, request: Any, serialize: Callable[[Any], bytes], timeout: float | None
    ) -> Future[bytes]:
        out: Future[bytes] = Future()
        try:
            out.set_result(self._hop(method, request, serialize(request), timeout))
        except TunnelError as exc:
            out.set_exception(exc)
        return out

    def _hop(self, method: str, request: Any, raw: bytes, timeout: float | None) -> bytes:
        hop = self.config.next_hop
        assert hop is not None, "only a party with a next hop forwards"
        session_id, iteration = request.ref.session_id, request.ref.iteration
        deadline = time.monotonic() + (timeout or self.config.rpc_seconds)
        keys = self._outgoing_keys(session_id, hop.name, deadline)
        header, sealed = keys.seal_request(method, iteration, raw)
        frame = pb.TunnelFrame()
        frame.call.method, frame.call.request, frame.call.peer = method, sealed, hop.name
        frame.call.hop.CopyFrom(header)
        reply = self._call(frame, deadline)
        try:
            inner = keys.open_reply(method, header, reply.reply)
        except CryptoError as exc:
            raise TunnelError(grpc.StatusCode.DATA_LOSS, str(exc)) from None
        error = reply_error(inner)
        if error is not None:
            raise error
        return inner.reply

    def _call(self, frame: pb.TunnelFrame, deadline: float) -> pb.TunnelReply:
        """Send a call to the relay; a failure (the relay's or the receiver's) is raised."""
        reply = self.endpoint.call(frame, deadline - time.monotonic()).result()
        error = reply_error(reply)
        if error is not None:
            raise error
        return reply

    def _outgoing_keys(self, session_id: str, receiver: str, deadline: float) -> HopKeys:
        with self.handshake_lock:
            keys = self.outgoing.get((session_id, receiver))
            if keys is not None:
                return keys
            private, offer = relay_crypto.offer(self.identity, session_id, receiver)
            call = pb.TunnelCall(method=HANDSHAKE, request=offer, peer=receiver)
            reply = self._call(pb.TunnelFrame(call=call), deadline)
            keys = self._accept(session_id, receiver, private, reply.reply)
            self.outgoing = {(session_id, receiver): keys}  # only the open session's
            return keys

    def _accept(
        self, session_id: str, receiver: str, private: X25519PrivateKey, answer: bytes
    ) -> HopKeys:
        try:
            return relay_crypto.accept(
                self.identity, self.ca, session_id, receiver, private, answer
            )
        except CryptoError as exc:
            raise TunnelError(
                grpc.StatusCode.PERMISSION_DENIED, f"hop handshake with {receiver} refused: {exc}"
            ) from None


def serve_outbound(config: PartyConfig, grace_seconds: float = 5.0) -> None:
    """``party serve`` in outbound mode: as `fedanon.party.daemon.serve`, but instead of a
    server, one stream to the relay, redialled until SIGTERM/SIGINT."""
    tie_to_parent()
    if config.tls is None:
        raise FedanonError(
            'transport = "outbound" needs TLS: the relay knows parties by certificate'
        )
    with holding_state_dir(config.state_dir):
        _serve_outbound(config, grace_seconds)


def _serve_outbound(config: PartyConfig, grace_seconds: float) -> None:
    """`serve_outbound` once the daemon holds its state_dir (released when it stops)."""
    servicer = build_servicer(config)
    assert servicer.identity is not None and servicer.ca_certificate is not None
    party = OutboundParty(servicer, servicer.identity, servicer.ca_certificate)
    if config.next_hop is not None:  # the last party forwards nothing (party/sums.py)
        stub = party.next_hop_stub()
        servicer.next_stub = lambda: stub
    stop = stop_on_signals()
    start_workers(servicer)
    print(
        f"party {config.name} dialling relay {config.relay} (outbound, mutual TLS, no listening "
        "port)",
        flush=True,
    )
    log.info("%s", config.policy.describe())
    connection = threading.Thread(target=party.run, args=(stop,), name="relay", daemon=True)
    connection.start()
    wait_for(stop)
    connection.join(grace_seconds)
    close_workers(servicer)


def _failure(name: str, code: grpc.StatusCode, message: str) -> pb.TunnelReply:
    text = f"party {name}: {message}"
    log.warning("%s", text)
    return pb.TunnelReply(code=code.value[0], details=text)


def _refused(name: str, exc: CryptoError) -> pb.TunnelReply:
    return _failure(name, grpc.StatusCode.PERMISSION_DENIED, str(exc))
