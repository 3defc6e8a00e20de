"""End-to-end sealing of the ring's party-to-party calls through the outbound relay.

In outbound mode (federation/tunnel.py) a party's call to its ring successor travels through the
leader's relay. The relay must learn what the leader learns in direct mode and no more: sizes and
timing. So the two parties agree a key per session and direction with a signed X25519 handshake
(each side's fresh public key signed with its certificate key, over a transcript naming the
session, both parties and both keys), and every request and reply is sealed with
AES-256-GCM under it (hardware AES: the ring's union batches cross here by the hundred
megabytes, and sealing them is on the ring's critical path; ChaCha20-Poly1305 took four times
the CPU per byte). The associated data binds the session, the iteration, the sender,
the receiver, the method and a per-direction counter; the receiver refuses a counter it has seen
(a replayed frame), a frame for another session or pair (misrouted) and any changed byte
(tampered). A relay that swaps keys fails the signature check; it cannot forge a caller either:
the receiver's gate authorizes the certificate the handshake verified.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding

from fedanon.crypto.errors import IntegrityError
from fedanon.crypto.identity import Identity, verify_certificate, verify_signature
from fedanon.crypto.keyshare import X25519_KEY_BYTES
from fedanon.crypto.wire import pack_frames, u64
from fedanon.protos import fedanon_v1_pb2 as pb

_OFFER = b"FHO1"  # the initiator's signed statement
_ANSWER = b"FHA1"  # the responder's
_KEYS = b"FHK1"  # the key derivation's info
_SEAL = b"FHS1"
REQUEST, REPLY = b"req", b"rep"


def _transcript(tag: bytes, hello: pb.HopHandshake, offered: bytes = b"") -> bytes:
    """What a side signs: tagged, and for the answer the initiator's key too."""
    items = [hello.session_id.encode(), hello.sender.encode(), hello.receiver.encode()]
    return pack_frames(tag, [*items, offered, bytes(hello.public_key)])


def _signed(
    tag: bytes, identity: Identity, hello: pb.HopHandshake, offered: bytes = b""
) -> pb.HopHandshake:
    hello.certificate = identity.certificate.public_bytes(Encoding.DER)
    hello.signature = identity.sign(_transcript(tag, hello, offered))
    return hello


def _verified(
    tag: bytes,
    hello: pb.HopHandshake,
    ca: x509.Certificate,
    signer: str,
    offered: bytes = b"",
) -> None:
    """The certificate is the federation's, names `signer` as a party, and signed `hello`."""
    if len(hello.public_key) != X25519_KEY_BYTES:
        raise IntegrityError("hop handshake does not hold a 32-byte X25519 key")
    try:
        certificate = x509.load_der_x509_certificate(bytes(hello.certificate))
    except ValueError:
        raise IntegrityError(
            f"hop handshake of '{signer}' carries no readable certificate"
        ) from None
    verify_certificate(certificate, ca, signer, "party")
    verify_signature(certificate, bytes(hello.signature), _transcript(tag, hello, offered))


@dataclass
class HopKeys:
    """One session's keys between a sender and its ring successor; counters per direction."""

    session_id: str
    sender: str
    receiver: str
    request_key: AESGCM
    reply_key: AESGCM
    caller_certificate: bytes = b""  # the sender's, DER (the receiver authorizes it)
    sent: int = 0
    seen: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _ad(self, direction: bytes, method: str, iteration: int, counter: int) -> bytes:
        items = [direction, self.session_id.encode(), self.sender.encode()]
        items += [self.receiver.encode(), method.encode(), u64(iteration), u64(counter)]
        return pack_frames(_SEAL, items)

    def seal_request(self, method: str, iteration: int, plain: bytes) -> tuple[pb.HopHeader, bytes]:
        """A fresh counter for this request and its ciphertext."""
        with self.lock:
            self.sent += 1
            counter = self.sent
        header = pb.HopHeader(session_id=self.session_id, iteration=iteration, counter=counter)
        ad = self._ad(REQUEST, method, iteration, counter)
        return header, self.request_key.encrypt(_nonce(counter), plain, ad)

    def open_request(self, method: str, header: pb.HopHeader, sealed: bytes) -> bytes:
        """The request, once: a counter seen before is a replay."""
        if header.session_id != self.session_id:
            raise IntegrityError("relayed frame refused: it belongs to another session")
        ad = self._ad(REQUEST, method, header.iteration, header.counter)
        try:
            plain = self.request_key.decrypt(_nonce(header.counter), sealed, ad)
        except InvalidTag:
            raise IntegrityError(
                f"relayed frame refused: it does not authenticate as {self.sender} -> "
                f"{self.receiver} (tampered or misrouted)"
            ) from None
        with self.lock:
            if header.counter in self.seen:
                raise IntegrityError(f"relayed frame refused: counter {header.counter} replayed")
            self.seen.add(header.counter)
        return plain

    def seal_reply(self, method: str, header: pb.HopHeader, reply: pb.TunnelReply) -> bytes:
        ad = self._ad(REPLY, method, header.iteration, header.counter)
        return self.reply_key.encrypt(_nonce(header.counter), reply.SerializeToString(), ad)

    def open_reply(self, method: str, header: pb.HopHeader, sealed: bytes) -> pb.TunnelReply:
        ad = self._ad(REPLY, method, header.iteration, header.counter)
        try:
            plain = self.reply_key.decrypt(_nonce(header.counter), sealed, ad)
        except InvalidTag:
            raise IntegrityError(
                f"relayed reply refused: it does not authenticate as {self.receiver} -> "
                f"{self.sender} (tampered or misrouted)"
            ) from None
        return pb.TunnelReply.FromString(plain)


def _nonce(counter: int) -> bytes:
    return bytes(4) + u64(counter)


def _derive(
    session_id: str, sender: str, receiver: str, shared: bytes, offered: bytes, answered: bytes
) -> tuple[AESGCM, AESGCM]:
    info = pack_frames(_KEYS, [sender.encode(), receiver.encode(), offered, answered])
    okm = HKDF(hashes.SHA256(), 64, session_id.encode(), info).derive(shared)
    return AESGCM(okm[:32]), AESGCM(okm[32:])


def offer(identity: Identity, session_id: str, receiver: str) -> tuple[X25519PrivateKey, bytes]:
    """The initiator's signed handshake request and its private key (kept for `accept`)."""
    private = X25519PrivateKey.generate()
    hello = pb.HopHandshake(
        session_id=session_id,
        sender=identity.name,
        receiver=receiver,
        public_key=private.public_key().public_bytes_raw(),
    )
    return private, _signed(_OFFER, identity, hello).SerializeToString()


def answer(
    identity: Identity,
    ca: x509.Certificate,
    session_id: str,
    predecessor: str,
    raw_offer: bytes,
) -> tuple[HopKeys, bytes]:
    """The responder's keys and signed reply to the open session's predecessor's offer."""
    hello = pb.HopHandshake.FromString(raw_offer)
    if hello.session_id != session_id:
        raise IntegrityError("hop handshake refused: it is for another session")
    if hello.sender != predecessor or hello.receiver != identity.name:
        raise IntegrityError(
            f"hop handshake refused: {hello.sender} -> {hello.receiver}, but this party "
            f"takes hops from '{predecessor}' only"
        )
    _verified(_OFFER, hello, ca, predecessor)
    private = X25519PrivateKey.generate()
    reply = pb.HopHandshake(
        session_id=session_id,
        sender=hello.sender,
        receiver=identity.name,
        public_key=private.public_key().public_bytes_raw(),
    )
    offered = bytes(hello.public_key)
    _signed(_ANSWER, identity, reply, offered)
    shared = private.exchange(X25519PublicKey.from_public_bytes(offered))
    request_key, reply_key = _derive(
        session_id, hello.sender, identity.name, shared, offered, bytes(reply.public_key)
    )
    keys = HopKeys(session_id, hello.sender, identity.name, request_key, reply_key)
    keys.caller_certificate = bytes(hello.certificate)
    return keys, reply.SerializeToString()


def accept(
    identity: Identity,
    ca: x509.Certificate,
    session_id: str,
    receiver: str,
    private: X25519PrivateKey,
    raw_answer: bytes,
) -> HopKeys:
    """The initiator's keys from the successor's signed answer."""
    reply = pb.HopHandshake.FromString(raw_answer)
    offered = private.public_key().public_bytes_raw()
    if (reply.session_id, reply.sender, reply.receiver) != (session_id, identity.name, receiver):
        raise IntegrityError("hop handshake answer is for another session or pair")
    _verified(_ANSWER, reply, ca, receiver, offered)
    answered = bytes(reply.public_key)
    shared = private.exchange(X25519PublicKey.from_public_bytes(answered))
    request_key, reply_key = _derive(session_id, identity.name, receiver, shared, offered, answered)
    return HopKeys(session_id, identity.name, receiver, request_key, reply_key)
