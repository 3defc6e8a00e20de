"""Per-test checks that no test leaves gRPC running, forks under gRPC, or leaks a process.

Why: a CI worker died with SIGSEGV in pandas' C CSV parser long after in-process gRPC tests had
run on it. gRPC's core threads (``grpc_global_tim``, ``event_engine``, ...) are process-wide:
they run while any channel or server lives (and a while after), and gRPC documents that
``fork()`` in a process where they run is unsafe (a forked child, or the parent, can later crash
in unrelated C code). So every test must leave behind no server or channel of its own, and no
test may fork once gRPC has started in its process (``subprocess`` and multiprocessing's
"spawn" and "forkserver" exec a fresh program and run no at-fork hook, so they are fine).

What a test owns is told from what the process-wide machinery owns by when it was made: a
thread, channel or process made while the test ran (setup, call or teardown) belongs to the
test, except what a fixture of a wider scope (module, session, ...) made while it was set up,
and a restart of such a fixture's process (the same command line: a test that kills a shared
daemon restarts it). gRPC's own core threads are C threads, invisible to ``threading``; only
the Python threads a server or a call starts (targets in the ``grpc`` package) are counted.
"""

from __future__ import annotations

import gc
import os
import sysconfig
import threading
import traceback
import weakref
from pathlib import Path
from typing import Any

import grpc
import grpc._channel

from tests.harness.wait import wait_while
from tests.leftovers import MULTIPROCESSING_HELPERS

#: Thread names (``/proc/self/task/*/comm``) of gRPC's core: once one exists, gRPC has started.
_CORE_THREADS = ("grpc", "event_engine", "lifeguard", "default-executo", "resolver-executo")

#: Forks made while gRPC's core ran, as one-line descriptions (filled by the at-fork hook).
forks_under_grpc: list[str] = []


def grpc_core_threads() -> list[str]:
    """Names of this process's threads that belong to gRPC's core (empty before its start)."""
    names = []
    for task in Path("/proc/self/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
        except OSError:  # the thread has just ended
            continue
        if name.startswith(_CORE_THREADS):
            names.append(name)
    return names


def _note_fork() -> None:
    """``os.register_at_fork(before=...)``: a hook cannot stop the fork (CPython ignores its
    exceptions), so it records the fork and the test that made it fails at its teardown."""
    running = grpc_core_threads()
    if running:
        stdlib = sysconfig.get_paths()["stdlib"]
        ours = [f for f in traceback.extract_stack() if not f.filename.startswith(stdlib)]
        where = ours[-2] if len(ours) > 1 else traceback.extract_stack()[0]  # above this hook
        forks_under_grpc.append(
            f"fork() from {where.filename}:{where.lineno} while gRPC's threads ran "
            f"({', '.join(sorted(set(running)))})"
        )


#: gRPC channels made in this process that are not closed yet, with their serial number and
#: where they were made (weakly held: a channel no one references any more is released by
#: gRPC itself).
_open_channels: weakref.WeakKeyDictionary[Any, tuple[int, str]] = weakref.WeakKeyDictionary()
_made = 0


def _track_channels() -> None:
    """Record every channel made through ``grpc.insecure_channel`` / ``secure_channel`` (both
    build ``grpc._channel.Channel``) until its ``close`` (or ``with`` exit) runs."""
    init, close = grpc._channel.Channel.__init__, grpc._channel.Channel._close

    def tracked_init(self: Any, *args: Any, **kwargs: Any) -> None:
        global _made
        init(self, *args, **kwargs)
        _made += 1
        _open_channels[self] = (_made, _maker())

    def tracked_close(self: Any) -> None:
        _open_channels.pop(self, None)
        close(self)

    grpc._channel.Channel.__init__ = tracked_init
    grpc._channel.Channel._close = tracked_close


def _maker() -> str:
    """Where the channel being made was asked for: the three innermost callers outside gRPC and
    the standard library, as file:line."""
    skip = (sysconfig.get_paths()["stdlib"], str(Path(grpc.__file__).parent), __file__)
    ours = [f for f in traceback.extract_stack() if not f.filename.startswith(skip)]
    return " < ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(ours[-3:]))


def install() -> None:
    """Once per test process: the fork hook and the channel tracking."""
    os.register_at_fork(before=_note_fork)
    _track_channels()


def _grpc_thread(thread: threading.Thread) -> bool:
    """A Python thread gRPC started: a server's serving loop, a call's or a channel's poller."""
    target = getattr(thread, "_target", None)
    return target is not None and str(getattr(target, "__module__", "")).startswith("grpc")


class Snapshot:
    """What existed before a test (or a wider fixture) began: threads, channels, processes."""

    def __init__(self) -> None:
        self.threads = set(threading.enumerate())
        self.grpc_threads = {t for t in self.threads if _grpc_thread(t)}
        self.channels = _made
        self.pids = _pids()

    def new_threads(self) -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t not in self.threads and t.is_alive()}

    def new_channels(self) -> list[Any]:
        return [ch for ch, (serial, _) in list(_open_channels.items()) if serial > self.channels]

    def new_pids(self) -> set[int]:
        return _pids() - self.pids


class Shared:
    """What fixtures of a wider scope made while they were set up; they outlive single tests."""

    def __init__(self) -> None:
        self.threads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
        self.channels: weakref.WeakSet[Any] = weakref.WeakSet()
        self.commands: set[str] = set()

    def adopt(self, before: Snapshot) -> None:
        self.threads.update(before.new_threads())
        self.channels.update(before.new_channels())
        self.commands.update(c for pid in before.new_pids() if (c := _cmdline(pid)))


#: How long what a test leaves may take to end before it counts (the suite's own tests of the
#: check set it lower through the environment).
GRACE_SECONDS = float(os.environ.get("FEDANON_TEST_GRACE_SECONDS", "15"))


def leaks(before: Snapshot, shared: Shared, seconds: float = GRACE_SECONDS) -> list[str]:
    """What the test made and left: gRPC threads, open channels, live processes of its own.

    Threads and processes get `seconds` to end (a server stopped without waiting for its
    event, a killed child not yet gone); the garbage collector runs before channels are
    judged, so only a channel something still references counts.
    """

    def left() -> list[str]:
        found = _found(before, shared)
        if found:
            gc.collect()  # before the next look: only a channel still referenced counts
        return found

    found = wait_while(left, seconds, interval=0.1)
    shared.threads.update(_grpc_threads(before, shared)[1])
    return found


def _grpc_threads(
    before: Snapshot, shared: Shared
) -> tuple[list[threading.Thread], list[threading.Thread]]:
    """The gRPC threads the test started that still run: its own, and as many as replace a
    wider fixture's that ended meanwhile (a test that stops a shared server restarts it)."""
    started = sorted(
        (t for t in before.new_threads() if _grpc_thread(t) and t not in shared.threads),
        key=lambda t: t.name,
    )
    ended = sum(1 for t in before.grpc_threads if t in shared.threads and not t.is_alive())
    return started[ended:], started[:ended]


def _found(before: Snapshot, shared: Shared) -> list[str]:
    found = [f"gRPC thread {t.name!r} still running" for t in _grpc_threads(before, shared)[0]]
    found += [
        "gRPC channel made at {1} never closed".format(*_open_channels.get(ch, (0, "?")))
        for ch in before.new_channels()
        if ch not in shared.channels
    ]
    for pid in sorted(before.new_pids()):
        command = _cmdline(pid)
        if command and not _fixtures(pid, shared) and _owned(pid) and not _helper(pid):
            found.append(f"process {pid} still running: {command[:160]}")
    return found


def _fixtures(pid: int, shared: Shared) -> bool:
    """`pid` is a wider fixture's process or runs under one: a daemon the fixture started, or
    restarted in the test (the same command line), and what that daemon starts itself (its
    fork server and workers, whose command lines carry descriptor numbers that may differ
    from the first start's)."""
    walk, me = pid, os.getpid()
    while walk > 1 and walk != me:
        if _cmdline(walk) in shared.commands:
            return True
        walk = _parent(walk)
    return False


def _pids() -> set[int]:
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def _cmdline(pid: int) -> str:
    """`pid`'s command line, "" once it is gone or a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):
            return ""
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except (OSError, IndexError):
        return ""


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _owned(pid: int) -> bool:
    """`pid` descends from this process, or carries its mark in its environment (a daemon
    that left its parent, now re-parented to init or to a sub-reaper)."""
    walk, me = pid, os.getpid()
    while walk > 1:
        walk = _parent(walk)
        if walk == me:
            return True
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{PROCESS_ENV}={me}".encode() in environ.split(b"\0")


#: Set to the pid of each test process (inherited by what it starts), see :func:`_owned`.
PROCESS_ENV = "FEDANON_TEST_PROCESS"


def _helper(pid: int) -> bool:
    """One of this process's own multiprocessing helpers (process-wide, not a test's)."""
    command = _cmdline(pid)
    return _parent(pid) == os.getpid() and any(h in command for h in MULTIPROCESSING_HELPERS)
