"""The per-test hygiene checks (tests/hygiene.py) name what a test leaves behind, and the
itemset miner's watched child no longer forks a process where gRPC runs."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures

import grpc

from fedanon.utility import miner
from fedanon.utility.transactions import Transactions
from tests import hygiene
from tests.harness.cli import owned

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


@contextlib.contextmanager
def grpc_running() -> Iterator[None]:
    """gRPC's core threads running, as while a test worker's in-process daemons or channels
    live (they end some time after the last gRPC object is gone)."""
    with grpc.insecure_channel("127.0.0.1:1") as channel:
        with contextlib.suppress(grpc.RpcError):  # nothing listens on port 1
            channel.unary_unary("/none/None")(b"", timeout=0.5)
        assert hygiene.grpc_core_threads()
        yield


def test_a_running_server_and_an_open_channel_are_named_until_stopped_and_closed() -> None:
    before = hygiene.Snapshot()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        found = hygiene.leaks(before, hygiene.Shared(), seconds=0)
        assert any(line.startswith("gRPC thread ") for line in found), found
        assert any(line.startswith("gRPC channel ") for line in found), found
    finally:
        channel.close()
        server.stop(None).wait()
    assert hygiene.leaks(before, hygiene.Shared()) == []


def test_what_a_wider_fixture_started_is_not_the_tests() -> None:
    """A server and a process made while a module or session fixture was set up, and a restart
    of that process (same command line) by a later test, are the fixture's."""
    fixture = hygiene.Snapshot()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    server.add_insecure_port("127.0.0.1:0")
    server.start()
    with owned(subprocess.Popen(SLEEPER, text=True)) as first:
        shared = hygiene.Shared()
        shared.adopt(fixture)
        try:
            test = hygiene.Snapshot()
            first.kill()
            first.wait()
            with owned(subprocess.Popen(SLEEPER, text=True)):  # the test's restart
                assert hygiene.leaks(test, shared, seconds=0) == []
                assert hygiene.leaks(test, hygiene.Shared(), seconds=0) != []
        finally:
            server.stop(None).wait()


def test_a_child_and_a_daemon_that_left_its_parent_are_named_until_they_end() -> None:
    before = hygiene.Snapshot()
    with owned(subprocess.Popen(SLEEPER, text=True)) as child:
        spawned = subprocess.run(  # the shell exits at once: its sleeper is re-parented
            ["sh", "-c", " ".join(f"'{part}'" for part in SLEEPER) + " >/dev/null 2>&1 & echo $!"],
            capture_output=True,
            text=True,
            check=True,
        )
        daemon = int(spawned.stdout)
        try:
            found = hygiene.leaks(before, hygiene.Shared(), seconds=0)
            assert any(line.startswith(f"process {child.pid} ") for line in found), found
            assert any(line.startswith(f"process {daemon} ") for line in found), found
        finally:
            os.kill(daemon, signal.SIGKILL)
    assert hygiene.leaks(before, hygiene.Shared()) == []


def test_a_fork_while_grpc_runs_is_recorded() -> None:
    """In a process of its own: forking this test process under gRPC is what is forbidden."""
    script = (
        "import os, grpc\n"
        "from tests import hygiene, test_hygiene\n"
        "hygiene.install()\n"
        "pid = os.fork()\n"  # before gRPC: allowed
        "if pid == 0: os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "print(len(hygiene.forks_under_grpc))\n"
        "with test_hygiene.grpc_running():\n"
        "    pid = os.fork()\n"
        "    if pid == 0: os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "print(hygiene.forks_under_grpc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    first, second = done.stdout.splitlines()
    assert first == "0"
    assert "fork() from <string>:9 while gRPC's threads ran" in second, done.stdout


def test_the_watched_miner_does_not_fork_a_process_where_grpc_runs() -> None:
    """The itemset miner's watched child (taken when the cheap bound cannot rule out the
    budget) forked the caller: in a test worker that had run gRPC tests, and in any caller
    that talks to a federation, a forked copy can inherit a lock a gRPC thread held."""
    log = Transactions.from_lists([list(range(1, 9))] * 20)  # 255 itemsets; the bound is 510
    with grpc_running():
        found = miner.frequent_itemsets(log, 0.5, max_itemsets=255)
    assert len(found) == 255
    assert hygiene.forks_under_grpc == []
