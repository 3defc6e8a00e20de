"""Ephemeral keys for the layered union's leader layer, generated while the party daemon is idle.

The leader's (innermost) layer needs a fresh X25519 key per record (`onion_union`); generating
it is about half of an owner's per-record public-key work, and it depends on nothing of a
session (not the records, not the leader's key, not the round). A daemon spends most of its
life waiting for sessions, so it generates the keys then, up to a capacity, and a union's seal
only does the exchange with the leader's key.

The keys live in the worker processes that later seal with them, as key objects: loading a raw
X25519 private key costs as much as generating one (the library derives its public key), so
keys made in one process and shipped to another would save nothing. Each worker generates only
once the daemon has been without a session for a while (`idle` / `busy`, `IDLE_AFTER_SECONDS`),
in small chunks between commands, so it does not compete with a session's work or with the
leader's work right after it; it seals its share of a batch with its own keys, popping each
key as it uses it (a key seals one item, ever), and generates fresh ones if it runs out. Keys
are never written anywhere and never leave their worker; keeping unused private keys in memory
between sessions adds nothing an attacker of the daemon would not already have (the daemon
holds the party's table).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from fedanon.crypto.onion_union import AheadKey, _ContextFields, _seal_innermost, new_ahead_key
from fedanon.crypto.parallel import _context

log = logging.getLogger(__name__)

CHUNK = 64  # keys generated between two looks at the command pipe: about 1.5 ms of work
# Generation starts this long after the last session ended (or after start-up): the leader's
# work after the union (checking and writing the release) and a job that follows at once are
# not slowed down by it, on a machine that hosts both.
IDLE_AFTER_SECONDS = 2.0


def _serve(commands: Connection, status: Connection, capacity: int, idle_after: float) -> None:
    """A worker: fill up to `capacity` keys once the daemon has been without a session for
    `idle_after` seconds; answer commands in order."""
    keys: list[AheadKey] = []
    idle_since: float | None = time.monotonic()  # None while a session runs
    while True:
        wait: float | None = None  # block until a command comes
        if idle_since is not None and len(keys) < capacity:
            wait = max(idle_since + idle_after - time.monotonic(), 0.0)
        if wait == 0.0 and not commands.poll(0):
            keys.extend(new_ahead_key() for _ in range(min(CHUNK, capacity - len(keys))))
            if len(keys) >= capacity:
                status.send(len(keys))
            continue
        if wait is not None and not commands.poll(wait):
            continue
        command, *args = commands.recv()
        if command == "stop":
            return
        if command == "busy":
            idle_since = None
        elif command == "idle":
            idle_since = time.monotonic()
            if len(keys) >= capacity:
                status.send(len(keys))  # full already: the daemon is ready as it is
        elif command == "count":
            commands.send(("count", len(keys)))
        elif command == "seal":
            context, items = args
            try:
                commands.send(("sealed", _seal_innermost(context, items, keys)))
            except Exception as exc:  # re-raised in the daemon, as the in-process seal would
                commands.send(("error", exc))


class IdleKeyWorkers:
    """`workers` processes holding up to `capacity` leader-layer keys between them."""

    def __init__(self, workers: int, capacity: int, idle_after: float = IDLE_AFTER_SECONDS) -> None:
        if workers < 1 or capacity < 0:
            raise ValueError(
                f"need at least one worker and capacity >= 0, got {workers}, {capacity}"
            )
        self.workers = workers
        self.capacity = capacity
        self.idle_after = idle_after
        self._lock = threading.Lock()
        self._processes: list[BaseProcess] = []
        self._commands: list[Connection] = []
        self._full = threading.Event()

    @property
    def running(self) -> bool:
        return bool(self._processes)

    def start(self) -> None:
        """Start the workers (a no-op for capacity 0); they begin generating at once."""
        if self.capacity == 0 or self._processes:
            return
        context = _context()
        share = -(-self.capacity // self.workers)
        statuses = []
        for _ in range(self.workers):
            ours, theirs = context.Pipe()
            status_in, status_out = context.Pipe(duplex=False)
            process = context.Process(
                target=_serve,
                args=(theirs, status_out, share, self.idle_after),
                name="idle-keys",
                daemon=True,
            )
            process.start()
            theirs.close()
            status_out.close()
            self._processes.append(process)
            self._commands.append(ours)
            statuses.append(status_in)
        threading.Thread(target=self._watch, args=(statuses,), daemon=True).start()

    def _watch(self, statuses: list[Connection]) -> None:
        """Log when every worker is full (again): the daemon is ready for a fast union."""
        full: dict[int, int] = {}
        try:
            while True:
                for index, status in enumerate(statuses):
                    if status.poll(0.05):
                        full[index] = status.recv()
                if len(full) == len(statuses):
                    log.info("idle key pool: %d keys ready", sum(full.values()))
                    self._full.set()
                    full = {}
        except (EOFError, OSError):
            return

    def wait_full(self, timeout: float) -> bool:
        """Whether every worker filled up within `timeout` seconds since the last `busy`."""
        return self._full.wait(timeout)

    def _tell(self, command: str) -> None:
        with self._lock:
            for pipe in self._commands:
                pipe.send((command,))

    def busy(self) -> None:
        """A session opened: stop generating (its seal still uses the keys already made)."""
        self._full.clear()
        self._tell("busy")

    def idle(self) -> None:
        """No session: generate up to capacity again."""
        self._tell("idle")

    def seal(self, context: _ContextFields, items: Sequence[bytes]) -> list[bytes]:
        """The leader layer on `items`, in order, split over the workers and their keys."""
        with self._lock:
            size = -(-len(items) // len(self._commands)) or 1
            chunks = [list(items[start : start + size]) for start in range(0, len(items), size)]
            for pipe, chunk in zip(self._commands, chunks, strict=False):
                pipe.send(("seal", context, chunk))
            sealed: list[bytes] = []
            errors: list[Exception] = []
            for pipe, _ in zip(self._commands, chunks, strict=False):
                kind, value = pipe.recv()
                if kind == "error":
                    errors.append(value)
                else:
                    sealed.extend(value)
            if errors:
                raise errors[0]
            return sealed

    def held(self) -> int:
        """How many keys the workers hold now (for tests and the daemon's status)."""
        with self._lock:
            for pipe in self._commands:
                pipe.send(("count",))
            return sum(pipe.recv()[1] for pipe in self._commands)

    def close(self) -> None:
        """Stop the workers; their keys die with them."""
        with self._lock:
            for pipe in self._commands:
                with contextlib.suppress(OSError):
                    pipe.send(("stop",))
            for process in self._processes:
                process.join(timeout=5)
                if process.is_alive():
                    process.kill()
            self._processes, self._commands = [], []
