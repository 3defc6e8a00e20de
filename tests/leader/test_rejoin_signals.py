"""A leader waiting for a party to rejoin stops at once on SIGTERM (issue: a signal must end the
leader promptly in every phase, and the rejoin wait lasts up to ``[timeouts] rejoin_seconds``,
a minute by default).

The wait runs in a process of its own, with the SIGTERM handler of ``fedanon leader run`` (it
raises the CLI's ``Terminated`` where no lock is left held), the party is unreachable (a closed
loopback port), and the bound is 60 s. The process must leave the wait within a few seconds of
the signal, wherever the kernel delivers it (gRPC's threads included).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import grpc

from fedanon.federation.transport import ready_within
from tests.harness.cli import owned, stop_with

_WAITING = """
import signal, sys, time
import grpc
from fedanon.federation.transport import RECONNECT_OPTIONS
from fedanon.leader.federation import PartyFailure
from fedanon.cli.main import Terminated, raise_terminated
from fedanon.leader import rejoin
from fedanon.leader.rejoin import Rejoiner
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc

signal.signal(signal.SIGTERM, raise_terminated)
ready_within = rejoin.ready_within

def announced(channel, seconds):  # the wait for the party has begun
    print("waiting", flush=True)
    return ready_within(channel, seconds)

rejoin.ready_within = announced
channel = grpc.insecure_channel(sys.argv[1], options=RECONNECT_OPTIONS)
stubs, channels = {"p": pb_grpc.PartyStub(channel)}, {"p": channel}
rejoiner = Rejoiner("ab" * 16, ["p"], stubs, 60.0, 30.0, channels=channels)
gone = PartyFailure("sum: party p: unreachable", party="p", code=grpc.StatusCode.UNAVAILABLE)
try:
    rejoiner._rejoin("p", 2, time.monotonic() + 60.0, gone)
except Terminated:
    print("terminated", flush=True)
finally:
    channel.close()  # as the leader's session closes its channels on the way out
"""


# No rerun since session 12: the hang (about 1 run in 140 under load) was in the wait, not at
# exit. gdb (two hangs, bench/RESULTS.md, h-hygiene session 12) found the main thread still in
# gRPC's blocking call; its Cython code calls threading.current_thread() and main_thread(),
# Python code, right before that wait, and a SIGTERM met there was deferred to a line of Python
# that came only when the call's 60 s ended (the deterministic case is in
# tests/cli/test_signal_safe_points.py; fedanon/interrupts.py now trips the signal again).
def test_a_leader_waiting_for_a_rejoin_stops_at_once_on_sigterm(tmp_path: Path) -> None:
    script = tmp_path / "waiting.py"
    script.write_text(_WAITING, encoding="utf-8")
    # A bound port that never listens: connections to it are refused, and no process started
    # beside this test can listen on it meanwhile (a free port could be taken by one).
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        command = [sys.executable, str(script), f"127.0.0.1:{held.getsockname()[1]}"]
        with owned(subprocess.Popen(command, stdout=subprocess.PIPE, text=True)) as waiting:
            assert waiting.stdout is not None
            assert waiting.stdout.readline() == "waiting\n"
            stopped = stop_with(waiting)
    assert stopped.out == "terminated\n"
    # The interpreter's own exit takes seconds on a loaded machine; the 60 s wait is gone.
    assert stopped.seconds < 20, f"the rejoin wait held the process {stopped.seconds:.1f} s"


def test_the_wait_for_a_party_leaves_no_thread_of_grpc_running() -> None:
    """A wait through ``grpc.channel_ready_future`` started gRPC's connectivity polling thread,
    a daemon thread that takes the channel's lock and outlives the wait: a leader that exited
    while that thread held the lock (a SIGTERM ends the leader at once) blocked forever in the
    channel's finalizer."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        channel = grpc.insecure_channel(f"127.0.0.1:{held.getsockname()[1]}")
        try:
            before = set(threading.enumerate())
            assert not ready_within(channel, 0.5)  # refused: never ready
            assert [t.name for t in set(threading.enumerate()) - before] == []
        finally:
            channel.close()
