"""Raise a signal's exception in the main thread where unwinding leaves no lock held.

A Python signal handler runs in the main thread between two bytecodes, wherever that thread is,
so an exception it raises can come between a lock's acquire and the ``with`` (or ``try``) that
would release it: ``threading.Condition.__enter__`` is Python code that calls the lock's acquire
and returns, and an exception raised right after that acquire leaves ``__enter__`` without the
caller's ``with`` ever owning the lock. gRPC takes its channel's condition that way (from its
Cython code), so a ``leader run`` terminated there kept the condition forever: its thread that
completes calls blocked on it, the session's abort waited for calls that could never end, and the
process outlived the SIGTERM (a flaky CI test, ended at last by SIGKILL).

So the handlers that unwind the main thread (the CLI's SIGTERM and SIGINT, the sim's) raise
through :func:`raise_safely`: at once where the main thread runs code outside the modules that
take locks this way, else at the next line that its interrupted code runs outside them, which
comes as soon as the lock's own code returns (the main thread's waits are timed, so it always
does). The waits are timed with :func:`wait_in_slices` where no library times them.
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from types import FrameType
from typing import Any

#: The modules whose Python code acquires a lock and then releases it, or hands it to the
#: caller's ``with``, in steps that an exception raised between two of them would split. Looked
#: up in ``sys.modules`` when a signal comes, not imported here: a module not loaded then runs no
#: frame (and a shuffle-mode leader never loads multiprocessing at all).
_LOCKING_MODULES = (
    "threading",
    "queue",
    "concurrent.futures._base",
    "concurrent.futures.thread",
    "concurrent.futures.process",
    "multiprocessing.connection",
    "multiprocessing.queues",
    "multiprocessing.synchronize",
)


def _locking_files() -> frozenset[str]:
    loaded = (sys.modules.get(name) for name in _LOCKING_MODULES)
    return frozenset(str(m.__file__) for m in loaded if m is not None and m.__file__)


def _in_locking_code(frame: FrameType) -> bool:
    return frame.f_code.co_filename in _locking_files()


#: The error a trace function raises at the main thread's next line outside the locking modules
#: (at most one: a later signal's replaces it).
_deferred: list[BaseException | type[BaseException]] = []


def raise_safely(
    error: BaseException | type[BaseException], frame: FrameType | None, signum: int | None = None
) -> None:
    """Raise `error` now if the main thread was stopped at `frame` (a handler's second
    argument) outside the locking modules; else at the next line that one of the frames then
    running (`frame` and its callers) runs outside them, from a trace function (an error raised
    by a trace function ends tracing). Frames called after the signal are not traced: one may
    be a callback (of a weak reference, of the garbage collector) whose errors Python ignores.

    While the error waits, signal `signum` is tripped again every ``SLICE_SECONDS``
    (:func:`_retrip`): the main thread can go on from the locking code straight into a long
    wait in C that runs no line of Python but looks for signals, and there the handler runs
    again, outside the locking modules, and raises. gRPC's blocking call is one: from Cython it
    calls ``threading.current_thread()`` and ``main_thread()``, Python code, right before its
    wait, and a SIGTERM met there held a terminated leader for the call's whole deadline (a
    minute; bench/RESULTS.md, session 12)."""
    if _deferred:  # an earlier signal still waits for its line: this one takes its place
        _deferred.clear()
        sys.settrace(None)
    if frame is None or not _in_locking_code(frame):
        raise error
    _deferred.append(error)
    sys.settrace(_untraced)  # tracing on, for the frames below; new frames untraced
    caller: FrameType | None = frame
    while caller is not None:
        caller.f_trace = _on_line
        caller = caller.f_back
    if signum is not None:
        _retrips[0] += 1
        # A bare thread: the main thread may be inside threading's own code, holding its locks.
        _thread.start_new_thread(_retrip, (signum, _retrips[0]))


#: How many retrip threads were started; each ends once a later one takes its place.
_retrips = [0]


def _retrip(signum: int, generation: int) -> None:
    """Trip `signum` for the main thread every ``SLICE_SECONDS`` while the error it deferred
    waits (``_thread.interrupt_main`` runs the signal's Python handler at the main thread's next
    check, as a signal delivered again would)."""
    while True:
        time.sleep(SLICE_SECONDS)
        if not _deferred or _retrips[0] != generation:
            return
        _thread.interrupt_main(signal.Signals(signum))


def raise_interrupted(signum: int, frame: FrameType | None) -> None:
    """A signal handler that raises KeyboardInterrupt through :func:`raise_safely`: a command's
    Ctrl-C, and the sim's SIGTERM (which ends it as Ctrl-C does, stopping its daemons)."""
    raise_safely(KeyboardInterrupt, frame, signum)


def _untraced(_frame: FrameType, _event: str, _arg: Any) -> None:
    return None


def _on_line(current: FrameType, event: str, _arg: Any) -> Any:
    """The trace function of the frames running at a deferred signal."""
    if not _deferred:  # raised already: a trace function set later must not raise it again
        return None
    if event == "line" and not _in_locking_code(current):
        raise _deferred.pop()
    return _on_line


#: The longest the main thread blocks in one wait. A signal that the kernel hands to another
#: thread (one of gRPC's) runs its Python handler only once the main thread runs Python again,
#: so a wait with no timeout, or a long one, holds a terminated command for all of it.
SLICE_SECONDS = 0.2


def wait_in_slices(done_within: Callable[[float], bool], seconds: float | None = None) -> bool:
    """Whether what `done_within(timeout)` waits for (it says whether it came) comes within
    `seconds` (None: however long it takes), waited ``SLICE_SECONDS`` at a time."""
    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        left = SLICE_SECONDS if deadline is None else deadline - time.monotonic()
        if left <= 0:
            return False
        if done_within(min(left, SLICE_SECONDS)):
            return True


def future_done_within(future: Future[Any], seconds: float) -> bool:
    """Whether `future` is done within `seconds` (for :func:`wait_in_slices`)."""
    return bool(wait([future], seconds).done)


def thread_done_within(thread: threading.Thread, seconds: float) -> bool:
    """Whether `thread` ends within `seconds` (for :func:`wait_in_slices`)."""
    thread.join(seconds)
    return not thread.is_alive()
