"""A command's SIGTERM (or Ctrl-C) unwinds its main thread without leaving a lock held, and
ends the main thread's waits at once, wherever the kernel delivers the signal.

The kernel may hand a process's signal to any of its threads (gRPC's included); Python then runs
the handler in the main thread at its next bytecode. A ``leader run`` terminated right after
gRPC's Cython code had taken its channel's condition (``threading.Condition.__enter__``, Python
code) raised there, before the ``with`` owned the lock: the lock stayed held, gRPC's thread that
completes calls blocked on it, and the leader's abort waited for calls that could never end (it
outlived the SIGTERM by a minute, about one CI run in three). Each case runs in a process of its
own, with the CLI's handlers (`signals_unwind`), the signal sent to another thread of it once its
main thread is where the case needs it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.cli import owned

_PRELUDE = """
import signal, sys, threading, time
from fedanon.cli.main import signals_unwind

sig = getattr(signal, sys.argv[1])
signal.signal(signal.SIGINT, signal.default_int_handler)  # as a shell in the foreground starts it
main = threading.main_thread().ident

def signal_once_main_is_in(code):
    # Delivered to this thread, as the kernel may deliver it to one of gRPC's: the main thread
    # runs its handler only when it runs Python again.
    while sys._current_frames()[main].f_code is not code:
        time.sleep(0.001)
    signal.pthread_kill(threading.get_ident(), sig)
"""

# The main thread waits to enter a condition another thread holds; that thread signals, then
# lets go: the main thread's acquire returns inside Condition.__enter__, where the handler runs.
_TAKING_A_LOCK = """
cond = threading.Condition()
held = threading.Event()

def hold_then_signal():
    with cond:
        held.set()
        signal_once_main_is_in(threading.Condition.__enter__.__code__)

with signals_unwind():
    threading.Thread(target=hold_then_signal).start()
    held.wait()
    try:
        with cond:
            print("entered")
    except KeyboardInterrupt as exc:  # the CLI's Terminated is one
        print(type(exc).__name__)
    taken = []
    other = threading.Thread(target=lambda: taken.append(cond.acquire(timeout=10)))
    other.start()
    other.join()
    print("free" if taken[0] else "held")
"""

# The leader's blocking call over the relay's tunnel (no gRPC channel): a reply that never comes.
_TUNNEL_CALL = """
from concurrent.futures import Future
from fedanon.federation.tunnel import TunnelChannel
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc

sent = threading.Event()

def send(*_args):
    sent.set()
    return Future()

def signal_once_waiting():
    sent.wait()
    signal_once_main_is_in(threading.Condition.wait.__code__)

stub = pb_grpc.PartyStub(TunnelChannel(send))
with signals_unwind():
    threading.Thread(target=signal_once_waiting, daemon=True).start()
    try:
        stub.Status(pb.StatusRequest(), timeout=600)
    except KeyboardInterrupt as exc:
        print(type(exc).__name__)
"""

# The session's close waits for its lease renewer: here one that never ends.
_SESSION_CLOSE = """
from types import SimpleNamespace
from fedanon.leader.session import Session

job = SimpleNamespace(parties=[], tls=None, name="job", rpc_seconds=5.0, relay_listen=None)
session = Session(job)
session.heartbeat = threading.Thread(target=threading.Event().wait, daemon=True)
session.heartbeat.start()
with signals_unwind():
    threading.Thread(
        target=signal_once_main_is_in,
        args=(threading.Thread._wait_for_tstate_lock.__code__,),
        daemon=True,
    ).start()
    try:
        session.close()
    except KeyboardInterrupt as exc:
        print(type(exc).__name__)
"""


# gRPC's blocking call runs threading's Python code (``current_thread()``, ``main_thread()``,
# from Cython) right before its wait in C, which runs no Python line but looks for signals:
# a signal met in that code was deferred to a line that came only when the call ended (a leader
# terminated while it waited for a party to rejoin stayed for the wait's whole minute). `meet`
# is compiled as threading's code, so the signal is met there, deterministically; the call on
# the same line waits 30 s for a port where nothing listens.
_GRPC_WAIT_AFTER_THREADING_CODE = """
import socket
import grpc
from fedanon.federation.transport import ready_within

namespace = {}
exec(compile("import signal\\ndef meet(sig):\\n    signal.raise_signal(sig)\\n",
             threading.__file__, "exec"), namespace)
meet = namespace["meet"]
held = socket.socket()
held.bind(("127.0.0.1", 0))
channel = grpc.insecure_channel(f"127.0.0.1:{held.getsockname()[1]}")
began = time.monotonic()
with signals_unwind():
    try:
        waited = meet(sig) or ready_within(channel, 30)
    except KeyboardInterrupt as exc:
        print(type(exc).__name__, "at once" if time.monotonic() - began < 10 else "late")
channel.close()
"""


def _run(tmp_path: Path, body: str, signal_name: str) -> str:
    script = tmp_path / "case.py"
    script.write_text(_PRELUDE + body, encoding="utf-8")
    command = [sys.executable, str(script), signal_name]
    with owned(subprocess.Popen(command, stdout=subprocess.PIPE, text=True)) as process:
        out, _ = process.communicate(timeout=60)
    assert process.returncode == 0
    return out


@pytest.mark.parametrize(
    ("signal_name", "raised"), [("SIGTERM", "Terminated"), ("SIGINT", "KeyboardInterrupt")]
)
def test_a_signal_met_while_taking_a_lock_unwinds_without_keeping_it(
    tmp_path: Path, signal_name: str, raised: str
) -> None:
    # Raised at the first line that owns the lock (inside the `with`), so the lock is let go;
    # raised inside Condition.__enter__, it was kept, and another thread never got it.
    assert _run(tmp_path, _TAKING_A_LOCK, signal_name).splitlines() == [raised, "free"]


@pytest.mark.parametrize("case", [_TUNNEL_CALL, _SESSION_CLOSE], ids=["tunnel-call", "close"])
def test_a_main_thread_wait_that_never_ends_ends_on_a_signal(tmp_path: Path, case: str) -> None:
    # Each waited with no timeout (for a reply, for the renewer): the handler never ran.
    assert _run(tmp_path, case, "SIGTERM").splitlines() == ["Terminated"]


@pytest.mark.parametrize(
    ("signal_name", "raised"), [("SIGTERM", "Terminated"), ("SIGINT", "KeyboardInterrupt")]
)
def test_a_signal_met_in_threading_code_right_before_a_grpc_wait_ends_the_wait(
    tmp_path: Path, signal_name: str, raised: str
) -> None:
    # It was raised after the call's whole wait (30 s here), outside the `try` that waited.
    out = _run(tmp_path, _GRPC_WAIT_AFTER_THREADING_CODE, signal_name)
    assert out.splitlines() == [f"{raised} at once"]
