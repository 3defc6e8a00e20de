"""Worker processes for the union's per-record public-key work.

The leader's innermost union layer has a fresh X25519 key per record (see `onion_union`), so
sealing and opening it cost one key exchange per record: about 80 µs to open and 150 µs to seal
each, seconds for a release of tens of thousands of records. The work is independent per
record, so it splits into chunks that run on other cores. Python threads did not speed it up
when tried: per record it is a handful of short calls, and the GIL is held for most of them.

Processes come from a fork server (`multiprocessing`'s "forkserver" start method), not from
forking the caller: the leader and the party daemon are multi-threaded gRPC processes, and a
forked copy of one can inherit a lock that another thread held. The server is started once per
process (`Parallelism.start`), with the crypto code preloaded, so under the `fedanon` command
each pool forks from it in about 30 ms (see `_PRELOAD` for callers with a heavy main script). A
batch below `min_records` stays in-process because pool start-up would cost more than it saves.

`multiprocessing` and the process pool are imported when a pool or the fork server is first
needed, not with this module: every leader and party imports it (for `Parallelism` in its
configuration), and a shuffle union or a small layered one never starts a worker.

Only bytes, ints and tuples of them go to a worker (keys as raw bytes, rebuilt there), through
a local pipe to the process's own workers. Nothing here touches the wire. Results come back
in input order, and an error raised in a worker is re-raised in the caller unchanged (same type,
same message), so a pooled call is indistinguishable from an in-process one.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    import multiprocessing.context
    from concurrent.futures import Future, ProcessPoolExecutor

T = TypeVar("T")

DEFAULT_MAX_WORKERS = 16
DEFAULT_MIN_RECORDS = 4096
# Several chunks per worker, so a worker slowed down by other load does not hold up the rest.
_TASKS_PER_WORKER = 4
_POLL_SECONDS = 0.2
# The caller's main module and the module whose functions run in the workers. Python 3.11's fork
# server never preloads __main__ (CPython gh-126631, fixed in later releases), so every worker
# re-runs the caller's main script: about 30 ms per pool for the `fedanon` command, which imports
# lazily, but about 0.5 s (and as much CPU per worker) for a script that imports pandas and gRPC.
_PRELOAD = ["__main__", "fedanon.crypto.onion_union"]


def default_workers() -> int:
    """One worker per CPU, capped: beyond that the union's serial rest (the transfers between
    hops, each hop's shuffle) dominates; up to it, the leader's opening (the union's last
    phase, when no party works) uses every core."""
    return min(os.cpu_count() or 1, DEFAULT_MAX_WORKERS)


@functools.cache
def _context() -> multiprocessing.context.ForkServerContext:
    """The fork-server context, with the preload set before the server first starts."""
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


@dataclass(frozen=True)
class Parallelism:
    """How many worker processes per-record work may use, and from which batch size on.

    The default is in-process (one worker): the crypto functions stay pure unless a role asks
    for a pool. Configuration files use `configured`, whose default is one worker per CPU.
    """

    workers: int = 1
    min_records: int = DEFAULT_MIN_RECORDS

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.min_records < 1:
            raise ValueError(f"min_records must be at least 1, got {self.min_records}")

    @classmethod
    def configured(cls, workers: int = 0, min_records: int = DEFAULT_MIN_RECORDS) -> Parallelism:
        """From a config file, where `workers` = 0 means `default_workers()`."""
        if workers < 0:
            raise ValueError(f"workers must be 0 (one per CPU) or more, got {workers}")
        return cls(workers or default_workers(), min_records)

    def start(self) -> None:
        """Start the fork server now (it boots in the background), not on the critical path."""
        if self.workers > 1:
            import multiprocessing.forkserver

            _context()
            with _signals_deferred():
                multiprocessing.forkserver.ensure_running()

    def map(self, fn: Callable[[Sequence[bytes]], list[T]], items: Sequence[bytes]) -> list[T]:
        """`fn(items)`, computed chunk by chunk on worker processes when the batch is large.

        `fn` must be a module-level function (or a `functools.partial` of one over plain
        values) that handles each item on its own, so that concatenating its results over
        consecutive chunks equals one call on the whole batch. The first chunk (in input order)
        that fails raises its error, as the in-process loop would; chunks not yet started are
        cancelled.
        """
        with Stream(self, fn, len(items)) as stream:
            stream.add(items)
            return stream.results()


def _die_with_parent() -> None:
    """A pool worker's initializer: exit as soon as the process that made the pool is gone.

    A worker holds both ends of its task queue's pipe, so it never sees the queue end: a leader
    or daemon killed with SIGKILL left its workers waiting forever (and, through them, its fork
    server). The parent's sentinel becomes readable when the parent dies.
    """
    import multiprocessing.connection

    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _started() -> None:
    """A no-op task: submitting it makes the pool start a worker process."""


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGTERM and SIGINT back while worker processes are launched (in the main thread).

    A handler that raises (the CLI turns SIGTERM into an exception) while a worker is being
    launched left a half-launched worker behind, which failed to load the pool's queues and
    printed a multiprocessing traceback. The signal is raised again, with the handler it
    would have met, as soon as the launch is complete.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # handlers run in the main thread only: nothing to hold back here
        return
    caught: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda number, _frame: caught.append(number))
        for sig in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        if caught:
            signal.raise_signal(caught[0])


class Stream(Generic[T]):
    """`fn` over a batch that arrives in chunks, each chunk's work started as it arrives.

    With a pool (`parallelism` has workers and `expected` items reach `min_records`), every
    chunk handed to `add` is split into pieces for the workers at once (several per worker, so
    that a worker slowed down by other load does not hold up the rest), and the work overlaps
    the arrival of the next chunk; otherwise the chunks are kept and `fn` runs in-process, on
    each chunk in turn, at `results`. The results come in input order and the first failing
    piece (in input order) raises its error, at `results`, however the batch arrived; pieces
    not yet started are cancelled on `close`. `Parallelism.map` is a stream of one chunk.
    """

    def __init__(
        self, parallelism: Parallelism, fn: Callable[[Sequence[bytes]], list[T]], expected: int
    ) -> None:
        self._fn = fn
        self._workers = parallelism.workers
        pooled = parallelism.workers > 1 and expected >= parallelism.min_records
        self._pieces: list[Future[list[T]]] = []
        self._kept: list[Sequence[bytes]] = []
        self._pool: ProcessPoolExecutor | None = None
        if pooled:  # start the workers now, before the first chunk arrives
            from concurrent.futures import ProcessPoolExecutor

            try:
                with _signals_deferred():
                    self._pool = ProcessPoolExecutor(
                        parallelism.workers, mp_context=_context(), initializer=_die_with_parent
                    )
                    for _ in range(parallelism.workers):
                        self._pool.submit(_started)
            except BaseException:
                # A SIGTERM held back during the launch is raised here, so no caller ever holds
                # this pool: shut it down now. Left to the garbage collector, it shut itself
                # down while the interpreter exited, and the two raced ("Exception ignored in
                # threading ... Bad file descriptor" after the one line, under load).
                self.close()
                raise

    def __enter__(self) -> Stream[T]:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def add(self, items: Sequence[bytes]) -> None:
        """One more chunk of the batch, in order."""
        if self._pool is None:
            self._kept.append(items)
            return
        size = -(-len(items) // (self._workers * _TASKS_PER_WORKER)) or 1
        for start in range(0, len(items), size):
            self._pieces.append(self._pool.submit(self._fn, items[start : start + size]))

    def results(self) -> list[T]:
        """`fn` of every item added, in order."""
        if self._pool is None:
            return [result for chunk in self._kept for result in self._fn(chunk)]
        return [result for piece in self._pieces for result in _result(piece)]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


def _result(piece: Future[list[T]]) -> list[T]:
    """`piece.result()`, looking up every ``_POLL_SECONDS``: a wait without a timeout is not
    interrupted by a signal that the kernel hands to another thread (a gRPC thread of the
    leader or daemon), so a SIGTERM would otherwise wait for the whole batch's work."""
    while True:
        try:
            return piece.result(_POLL_SECONDS)
        except TimeoutError:
            continue


SEQUENTIAL = Parallelism()
