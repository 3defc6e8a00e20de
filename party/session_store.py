"""A party's sealed session state: what a restarted daemon needs to rejoin its session.

Rejoin by replay (docs/distributed.md, "Rejoin") must give the party the same keys it had
before it died: its pairwise masks must be the ones its peers' masks cancel, its union key the
one in everybody's route, its sealed totals the ones the leader can open. So once a session's
keys are shared (``ShareKeys``), the party writes one file under its ``state_dir``: the
handshake and key-sharing requests as the leader sent them (protobuf bytes, nothing secret) and
its own private keys for the session. The file is JSON (never pickle), encrypted and
authenticated with AES-GCM under a key derived (HKDF-SHA256) from the party's own TLS private
key, so only this party's identity can read it and any change to it is detected. It is written
atomically and deleted at ``End`` (normal or abort), when a new session opens, and once its
session's lease lapses: a timer deletes it, so keys a leader gave up on never outlive the lease
on disk, whether or not any message of the session comes again. Only a regular file is read (a
link, a directory, a FIFO or an oversized file in its place is not a sealed session: reading
through a link or from a FIFO could hang the daemon or read someone else's file).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fedanon.atomic import atomic_path
from fedanon.crypto.identity import Identity
from fedanon.errors import FedanonError
from fedanon.protos import fedanon_v1_pb2 as pb

log = logging.getLogger(__name__)

#: The file's name under the state directory (one session at a time, like the daemon).
FILE_NAME = "session.sealed"
#: Binds the derived key and every ciphertext to this use and format.
_INFO = b"fedanon sealed session state v1"
_NONCE_BYTES = 12
#: The largest file read as a sealed session: its two requests are each bounded by the daemon's
#: 1 MiB control-message limit (party/servicer.py), base64 and the keys add a third.
MAX_SEALED_BYTES = 4 << 20


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
    # What the daemon read its session from (party/inputs.py): a restart with another table,
    # taxonomy or delimiter cannot rejoin (its release would not be the one the job began).
    inputs: bytes = b""
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
                "inputs": _b64(self.inputs),
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
            base64.b64decode(doc["inputs"]),
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
        self,
        directory: Path | None,
        identity: Identity | None,
        lease_seconds: float,
        idle: Callable[[str], float | None] = lambda _session_id: None,
    ) -> None:
        """`idle` says how long ago the open session `session_id` last heard its leader (None:
        not open here; the time since the file was last written or claimed then counts)."""
        self.path = None if directory is None or identity is None else directory / FILE_NAME
        self._aead = None if identity is None else AESGCM(_seal_key(identity))
        self._aad = b"" if identity is None else identity.name.encode()
        self.lease_seconds = lease_seconds
        self.idle = idle
        # The digest of what the daemon read at start (party/inputs.py; the daemon sets it).
        self.inputs = b""
        self.started = self._since = time.monotonic()
        self._lock = threading.RLock()
        self._timer: threading.Timer | None = None
        self.pending: SealedSession | None = self._load()
        # What the file holds (a rejoined session's stays until its End).
        self.state: SealedSession | None = self.pending
        if self.pending is not None:
            self._arm(lease_seconds)

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
        with self._lock:
            # a directory it creates is the daemon's own (0700): nobody else lists its sessions
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with atomic_path(self.path) as tmp:
                fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC)
                try:
                    os.fchmod(fd, 0o600)
                    _write_all(fd, sealed)
                    if durable:
                        os.fsync(fd)
                finally:
                    os.close(fd)
            self.state = state  # only what the disk holds (a failed write keeps the last)
            self._since = time.monotonic()
            self._arm(self.lease_seconds)

    def applied(self, session_id: str, applied: int, chain: bytes) -> None:
        """Record that the session answered `applied` iterations, their instructions hashed
        to `chain` (before the answer leaves the party)."""
        self.update(session_id, applied=applied, chain=chain)

    def update(self, session_id: str, **changes: object) -> None:
        """Seal `changes` to session `session_id`'s state (progress, no sync: see `save`)."""
        with self._lock:
            state = self.state
            if state is not None and state.session_id == session_id:
                self.save(replace(state, **changes), durable=False)  # type: ignore[arg-type]

    def waiting(self, session_id: str) -> SealedSession | None:
        """The sealed session `session_id`, while the daemon's lease for it runs; a lapsed one
        is forgotten (its leader gave up on this party)."""
        with self._lock:
            state = self.pending
            if state is None or state.session_id != session_id:
                return None
            if time.monotonic() - self.started > self.lease_seconds:
                self._lapsed(session_id)
                return None
            return state

    def claim(self, session_id: str) -> SealedSession | None:
        """The sealed session `session_id` (as `waiting`), no longer pending: the leader's
        ``Rejoin`` restores it (the file stays: a second restart rejoins the same way). Its
        lease counts from now until the restored session is open."""
        with self._lock:
            state = self.waiting(session_id)
            if state is not None:
                self.pending = None
                self._since = time.monotonic()
            return state

    def clear(self, session_id: str | None = None) -> None:
        """Delete the sealed file (only if it is `session_id`'s, when given)."""
        with self._lock:
            sealed = self.state
            if session_id is not None and (sealed is None or sealed.session_id != session_id):
                return
            self.pending = self.state = None
            if self.path is None:
                return
            try:
                self.path.unlink(missing_ok=True)
            except OSError as exc:  # a directory in its place (left at start-up): no file
                log.warning("%s: cannot delete it (%s)", self.path, exc.strerror)

    def _lapsed(self, session_id: str) -> None:
        log.warning(
            "sealed session %s deleted: its lease (%g s) lapsed",
            session_id[:12],
            self.lease_seconds,
        )
        self.clear(session_id)

    def _arm(self, seconds: float) -> None:
        """Look again in `seconds` whether the sealed session's lease lapsed (one timer)."""
        if self._timer is not None and self._timer.is_alive():
            return
        self._timer = threading.Timer(max(seconds, 0.0), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        """Delete the file once its session went a lease without its leader (an open session:
        its own lease clock; otherwise since the file was written, or since the daemon started
        for a session it found sealed); else look again when the lease would lapse."""
        with self._lock:
            self._timer = None
            state = self.state
            if state is None:
                return
            idle = self.idle(state.session_id)
            if idle is None:
                idle = time.monotonic() - (self.started if self.pending else self._since)
            if idle >= self.lease_seconds:
                self._lapsed(state.session_id)
            else:
                self._arm(self.lease_seconds - idle)

    def _load(self) -> SealedSession | None:
        """The sealed session a previous run of this daemon left, or None (a file that does not
        open under this party's key is logged and deleted: it is no use to anyone)."""
        if self.path is None or self._aead is None:
            return None
        # A write the previous run was killed in left its temporary (fedanon/atomic.py's name):
        # sealed keys of no use to anyone, which must not stay on disk.
        for torn in self.path.parent.glob(f".{FILE_NAME}.*.tmp"):
            log.warning("%s: a sealing interrupted by a restart; deleted", torn)
            torn.unlink(missing_ok=True)
        data = self._read(self.path)
        if data is None:
            return None
        try:
            plain = self._aead.decrypt(data[:_NONCE_BYTES], data[_NONCE_BYTES:], self._aad)
            state = SealedSession.from_json(plain)
        except (InvalidTag, ValueError, KeyError, TypeError) as exc:
            log.warning("%s: not a session this party sealed (%s); deleted", self.path, exc)
            self.path.unlink(missing_ok=True)
            return None
        log.info("sealed session %s found: waiting for its leader's rejoin", state.session_id[:12])
        return state

    @staticmethod
    def _read(path: Path) -> bytes | None:
        """The bytes of the regular file `path` (None: none there); anything else in its place
        (a link, a FIFO, a device, an oversized file) is logged and deleted, a directory logged
        and left, neither followed nor read."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as exc:  # a link (ELOOP), or unreadable
            problem = "a symbolic link" if path.is_symlink() else f"unreadable ({exc.strerror})"
            return SessionStore._refused(path, problem)
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                log.warning("%s: a directory, not a sealed session; no rejoin", path)
                return None
            if not stat.S_ISREG(info.st_mode):
                return SessionStore._refused(path, "not a regular file")
            if info.st_size > MAX_SEALED_BYTES:
                return SessionStore._refused(path, f"{info.st_size} bytes, too large")
            with os.fdopen(os.dup(fd), "rb") as file:
                return file.read(MAX_SEALED_BYTES + 1)
        finally:
            os.close(fd)

    @staticmethod
    def _refused(path: Path, problem: str) -> None:
        log.warning("%s: %s, not a sealed session; deleted", path, problem)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("%s: cannot delete it (%s)", path, exc.strerror)
        return None


#: The lock file a running daemon holds in its state directory (`holding_state_dir`).
LOCK_NAME = ".daemon.lock"


@contextlib.contextmanager
def holding_state_dir(directory: Path | None) -> Iterator[None]:
    """Hold `directory` for this daemon alone while it runs, taken before anything reads it:
    an exclusive lock on its lock file. Two daemons with one ``state_dir`` (a copied
    party.toml) would overwrite each other's sealed session, and each would delete the other's
    at start-up as a file it cannot open: the second is refused in one line instead."""
    if directory is None:
        yield
        return
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise FedanonError(f"state_dir {directory}: cannot use it ({exc.strerror})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise FedanonError(
                f"state_dir {directory} is in use by another running daemon "
                "(each party needs its own)"
            ) from None
        yield
    finally:
        os.close(fd)  # the lock goes with it


def _write_all(fd: int, data: bytes) -> None:
    """Write all of `data`: a short write (a full disk) raises, never leaves a torn file to be
    renamed into place over the last good one."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, "no space left to seal the session")
        view = view[written:]


def _seal_key(identity: Identity) -> bytes:
    """The file's AES-256 key: HKDF-SHA256 of the party's private TLS key (PKCS#8 DER)."""
    secret = identity.key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    hkdf = HKDF(hashes.SHA256(), 32, salt=identity.name.encode(), info=_INFO)
    return hkdf.derive(secret)
