"""A party's sealed session state: what a restarted daemon needs to rejoin its session.

Rejoin by replay (docs/distributed.md, "Rejoin") must give the party the same keys it had
before it died: its pairwise masks must be the ones its peers' masks cancel, its union key the
one in everybody's route, its sealed totals the ones the leader can open. So once a session's
keys are shared (``ShareKeys``), the party writes one file under its ``state_dir``: the
handshake and key-sharing requests as the leader sent them (protobuf bytes, nothing secret) and
its own private keys for the session. The file is JSON (never pickle), encrypted and
authenticated with AES-GCM under a key derived (HKDF-SHA256) from the party's own TLS private
key, so only this party's identity can read it and any change to it is detected. It is written
atomically and deleted at ``End`` (normal or abort), when a new session opens, and when the
daemon's lease for it lapses before the leader asked it to rejoin.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fedanon.atomic import atomic_path
from fedanon.crypto.identity import Identity
from fedanon.protos import fedanon_v1_pb2 as pb

log = logging.getLogger(__name__)

#: The file's name under the state directory (one session at a time, like the daemon).
FILE_NAME = "session.sealed"
#: Binds the derived key and every ciphertext to this use and format.
_INFO = b"fedanon sealed session state v1"
_NONCE_BYTES = 12


@dataclass(frozen=True)
class SealedSession:
    """One session's state as sealed: the leader's two requests and this party's keys."""

    session_id: str
    open_request: pb.OpenSessionRequest
    share_keys: pb.ShareKeysRequest
    union_key: X25519PrivateKey
    sum_key: X25519PrivateKey | None  # the pairwise sum's (none for the ring sum)
    # How many secure-sum iterations the party had answered, and the hash chain of their
    # instructions (LKCSession.chain): a rejoin must replay exactly these (party/rejoin.py).
    applied: int = 0
    chain: bytes = b""
    # The union, resumable in its round after a restart (party/union.py): the secret this
    # party's shuffles are drawn from, the round whose COLLECT output left it, and the round
    # and digest of the batch it peeled (-1: none; a union's first round can be 0).
    strip_secret: bytes = b""
    collected: int = -1
    stripped_round: int = -1
    stripped_digest: bytes = b""
    # The session's attempt and its roster once a rerun moved it past its first
    # (party/exclusion.py): a rejoin replays the switch before the attempt's log.
    attempt: int = 0
    rerun_ring: tuple[str, ...] = ()

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "session_id": self.session_id,
                "open_request": _b64(self.open_request.SerializeToString()),
                "share_keys": _b64(self.share_keys.SerializeToString()),
                "union_key": _b64(_raw(self.union_key)),
                "sum_key": None if self.sum_key is None else _b64(_raw(self.sum_key)),
                "applied": self.applied,
                "chain": _b64(self.chain),
                "strip_secret": _b64(self.strip_secret),
                "collected": self.collected,
                "stripped_round": self.stripped_round,
                "stripped_digest": _b64(self.stripped_digest),
                "attempt": self.attempt,
                "rerun_ring": list(self.rerun_ring),
            }
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> SealedSession:
        doc = json.loads(data)
        sum_key = doc["sum_key"]
        return cls(
            str(doc["session_id"]),
            pb.OpenSessionRequest.FromString(base64.b64decode(doc["open_request"])),
            pb.ShareKeysRequest.FromString(base64.b64decode(doc["share_keys"])),
            X25519PrivateKey.from_private_bytes(base64.b64decode(doc["union_key"])),
            None
            if sum_key is None
            else X25519PrivateKey.from_private_bytes(base64.b64decode(sum_key)),
            int(doc["applied"]),
            base64.b64decode(doc["chain"]),
            base64.b64decode(doc["strip_secret"]),
            int(doc["collected"]),
            int(doc["stripped_round"]),
            base64.b64decode(doc["stripped_digest"]),
            int(doc["attempt"]),
            tuple(str(name) for name in doc["rerun_ring"]),
        )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _raw(key: X25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.Raw,
        serialization.PrivateFormat.Raw,
        serialization.NoEncryption(),
    )


class SessionStore:
    """The sealed file of one daemon: written at key sharing, read once at start-up.

    Disabled (nothing written, no rejoin) without a ``state_dir`` or without a TLS identity
    (the key that seals the file is derived from it). `pending` is the session a restarted
    daemon found sealed, offered for rejoin until `lease_seconds` after the daemon started.
    """

    def __init__(
        self, directory: Path | None, identity: Identity | None, lease_seconds: float
    ) -> None:
        self.path = None if directory is None or identity is None else directory / FILE_NAME
        self._aead = None if identity is None else AESGCM(_seal_key(identity))
        self._aad = b"" if identity is None else identity.name.encode()
        self.lease_seconds = lease_seconds
        self.started = time.monotonic()
        self.pending: SealedSession | None = self._load()
        # What the file holds (a rejoined session's stays until its End).
        self.state: SealedSession | None = self.pending

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def save(self, state: SealedSession, durable: bool = True) -> None:
        """Seal `state` atomically (the previous session's file, if any, is replaced).

        `durable` syncs it to the disk: the keys, once. The count of answered iterations is
        rewritten at every iteration without a sync (the rename is atomic, and a killed process
        loses nothing the kernel has; a host crash may lose the latest count)."""
        if self.path is None or self._aead is None:
            return
        nonce = os.urandom(_NONCE_BYTES)
        sealed = nonce + self._aead.encrypt(nonce, state.to_json(), self._aad)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.state = state
        with atomic_path(self.path) as tmp:
            fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC)
            try:
                os.fchmod(fd, 0o600)
                os.write(fd, sealed)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)

    def applied(self, session_id: str, applied: int, chain: bytes) -> None:
        """Record that the session answered `applied` iterations, their instructions hashed
        to `chain` (before the answer leaves the party)."""
        self.update(session_id, applied=applied, chain=chain)

    def update(self, session_id: str, **changes: object) -> None:
        """Seal `changes` to session `session_id`'s state (progress, no sync: see `save`)."""
        state = self.state
        if state is not None and state.session_id == session_id:
            self.save(replace(state, **changes), durable=False)  # type: ignore[arg-type]

    def waiting(self, session_id: str) -> SealedSession | None:
        """The sealed session `session_id`, while the daemon's lease for it runs; a lapsed one
        is forgotten (its leader gave up on this party)."""
        state = self.pending
        if state is None or state.session_id != session_id:
            return None
        if time.monotonic() - self.started > self.lease_seconds:
            log.warning(
                "sealed session %s dropped: no rejoin within the %g s lease",
                session_id[:12],
                self.lease_seconds,
            )
            self.clear()
            return None
        return state

    def clear(self, session_id: str | None = None) -> None:
        """Delete the sealed file (only if it is `session_id`'s, when given)."""
        sealed = self.state
        if session_id is not None and (sealed is None or sealed.session_id != session_id):
            return
        self.pending = self.state = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    def _load(self) -> SealedSession | None:
        """The sealed session a previous run of this daemon left, or None (a file that does not
        open under this party's key is logged and deleted: it is no use to anyone)."""
        if self.path is None or self._aead is None or not self.path.exists():
            return None
        data = self.path.read_bytes()
        try:
            plain = self._aead.decrypt(data[:_NONCE_BYTES], data[_NONCE_BYTES:], self._aad)
            state = SealedSession.from_json(plain)
        except (InvalidTag, ValueError, KeyError, TypeError) as exc:
            log.warning("%s: not a session this party sealed (%s); deleted", self.path, exc)
            self.path.unlink(missing_ok=True)
            return None
        log.info("sealed session %s found: waiting for its leader's rejoin", state.session_id[:12])
        return state


def _seal_key(identity: Identity) -> bytes:
    """The file's AES-256 key: HKDF-SHA256 of the party's private TLS key (PKCS#8 DER)."""
    secret = identity.key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    hkdf = HKDF(hashes.SHA256(), 32, salt=identity.name.encode(), info=_INFO)
    return hkdf.derive(secret)
