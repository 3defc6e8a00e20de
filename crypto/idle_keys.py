"""Ephemeral keys for the layered union's leader layer, generated while the party daemon is idle.

The leader's (innermost) layer needs a fresh X25519 key per record (`onion_union`); generating
it is about half of an owner's per-record public-key work, and it depends on nothing of a
session (not the records, not the leader's key, not the round). A daemon spends most of its
life waiting for sessions, so it generates the keys then, up to a capacity. Once a session's
keys are shared (`prepare`), the workers exchange their keys with the leader's union key while
the specialization loop runs, so the seal itself is mostly AES.

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
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import cast

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

from fedanon.crypto.onion_union import (
    AheadKey,
    OuterLayers,
    _ContextFields,
    _seal_innermost,
    new_ahead_key,
    prepare_leader_ephemeral,
)
from fedanon.crypto.parallel import _context

log = logging.getLogger(__name__)

CHUNK = 64  # keys generated between two looks at the command pipe: about 1.5 ms of work
# Generation starts this long after the last session ended (or after start-up): the leader's
# work after the union (checking and writing the release) and a job that follows at once are
# not slowed down by it, on a machine that hosts both.
IDLE_AFTER_SECONDS = 2.0


class _Worker:
    """One worker's keys: the stock made while idle, and those prepared for a session's leader."""

    def __init__(self, capacity: int, idle_after: float) -> None:
        self.capacity = capacity
        self.idle_after = idle_after
        self.stock: list[AheadKey] = []
        self.idle_since: float | None = time.monotonic()  # None while a session runs
        # Prepared for one session: the leader's key, the target count, the exchanged keys.
        self.leader: X25519PublicKey | None = None
        self.leader_bytes = b""
        self.target = 0
        self.ready: list[tuple[bytes, bytes]] = []

    def work_left(self) -> float | None:
        """Seconds until there is background work to do (0: now), or None: none."""
        if self.leader is not None and len(self.ready) < self.target:
            return 0.0
        if self.idle_since is not None and len(self.stock) < self.capacity:
            return max(self.idle_since + self.idle_after - time.monotonic(), 0.0)
        return None

    def work(self, status: Connection) -> None:
        """One chunk of background work: prepare for the session's leader, else fill the stock."""
        if self.leader is not None and len(self.ready) < self.target:
            for _ in range(min(CHUNK, self.target - len(self.ready))):
                ahead = self.stock.pop() if self.stock else None
                self.ready.append(prepare_leader_ephemeral(self.leader, ahead))
            return
        self.stock.extend(
            new_ahead_key() for _ in range(min(CHUNK, self.capacity - len(self.stock)))
        )
        if len(self.stock) >= self.capacity:
            status.send(len(self.stock))

    def prepare(self, leader_key: bytes, target: int) -> None:
        """Exchange up to `target` keys with this session's leader key, in the background."""
        self.drop_prepared()
        self.leader = X25519PublicKey.from_public_bytes(leader_key)
        self.leader_bytes, self.target = leader_key, target

    def drop_prepared(self) -> None:
        """Forget the keys prepared for a session (they are bound to its leader key)."""
        self.leader, self.leader_bytes, self.target, self.ready = None, b"", 0, []

    def seal(
        self, context: _ContextFields, items: list[bytes], outer: OuterLayers = ()
    ) -> tuple[list[bytes], int, int]:
        """The items' leader layer, `outer`'s party layers over it; how many keys came
        prepared and from the stock."""
        if self.leader_bytes != context[2][-1]:
            self.drop_prepared()  # prepared for another leader key: never used
        ready, stock = len(self.ready), len(self.stock)
        sealed = _seal_innermost(context, items, self.stock, self.ready, outer)
        self.target = 0  # the union has its keys: prepare no more
        return sealed, ready - len(self.ready), stock - len(self.stock)


def _serve(commands: Connection, status: Connection, capacity: int, idle_after: float) -> None:
    """A worker: background work between commands (`_Worker`); commands answered in order.

    A daemon killed outright (SIGKILL, or its parent gone) closes the pipes without "stop":
    the worker then ends quietly, not with a traceback in the daemon's log."""
    try:
        _serve_commands(commands, status, _Worker(capacity, idle_after))
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return


def _serve_commands(commands: Connection, status: Connection, worker: _Worker) -> None:
    capacity = worker.capacity
    while True:
        wait = worker.work_left()
        if wait == 0.0 and not commands.poll(0):
            worker.work(status)
            continue
        if wait is not None and not commands.poll(wait):
            continue
        command, *args = commands.recv()
        if command == "stop":
            return
        if command == "busy":
            worker.idle_since = None
        elif command == "idle":
            worker.idle_since = time.monotonic()
            worker.drop_prepared()
            if len(worker.stock) >= capacity:
                status.send(len(worker.stock))  # full already: the daemon is ready as it is
        elif command == "prepare":
            worker.prepare(*args)
        elif command == "count":
            commands.send(("count", (len(worker.stock), len(worker.ready))))
        elif command == "seal":
            try:
                commands.send(("sealed", worker.seal(*args)))
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
        # Of the last seal's items: how many had a key prepared during the loop, from the stock.
        self.last_keys = (0, 0)
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
                for ready in wait(statuses):  # blocks until a worker reports
                    status = cast(Connection, ready)
                    full[statuses.index(status)] = status.recv()
                if len(full) == len(statuses):
                    log.info("idle key pool: %d keys ready", sum(full.values()))
                    self._full.set()
                    full = {}
        except (EOFError, OSError):
            return

    def wait_full(self, timeout: float) -> bool:
        """Whether every worker filled up within `timeout` seconds since the last `busy`."""
        return self._full.wait(timeout)

    def _tell(self, *command: object) -> None:
        with self._lock:
            for pipe in self._commands:
                pipe.send(command)

    def busy(self) -> None:
        """A session opened: stop generating (its seal still uses the keys already made)."""
        self._full.clear()
        self._tell("busy")

    def idle(self) -> None:
        """No session: drop what was prepared for the last one, generate up to capacity again."""
        self._tell("idle")

    def prepare(self, leader_key: bytes, count: int) -> None:
        """While the session's loop runs: exchange `count` keys (from the stock, else new ones)
        with its leader's union key, split over the workers as `seal` will split the items."""
        self._tell("prepare", leader_key, -(-count // max(len(self._commands), 1)))

    def seal(
        self, context: _ContextFields, items: Sequence[bytes], outer: OuterLayers = ()
    ) -> list[bytes]:
        """The leader layer on `items` and `outer`'s party layers over it, in order, split over
        the workers and their keys."""
        with self._lock:
            size = -(-len(items) // len(self._commands)) or 1
            chunks = [list(items[start : start + size]) for start in range(0, len(items), size)]
            for pipe, chunk in zip(self._commands, chunks, strict=False):
                pipe.send(("seal", context, chunk, outer))
            sealed: list[bytes] = []
            errors: list[Exception] = []
            self.last_keys = (0, 0)
            for pipe, _ in zip(self._commands, chunks, strict=False):
                kind, value = pipe.recv()
                if kind == "error":
                    errors.append(value)
                else:
                    part, prepared, stock = value
                    sealed.extend(part)
                    self.last_keys = (self.last_keys[0] + prepared, self.last_keys[1] + stock)
            if errors:
                raise errors[0]
            return sealed

    def counts(self) -> tuple[int, int]:
        """Keys held now: (in stock, prepared for the session's leader)."""
        with self._lock:
            for pipe in self._commands:
                pipe.send(("count",))
            replies = [pipe.recv()[1] for pipe in self._commands]
            return sum(r[0] for r in replies), sum(r[1] for r in replies)

    def held(self) -> int:
        """Keys in stock now (made while idle, not yet used)."""
        return self.counts()[0]

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
