"""The per-test hygiene checks (tests/hygiene.py) name what a test leaves behind, and the
itemset miner's watched child no longer forks a process where gRPC runs."""

from __future__ import annotations

import contextlib
import multiprocessing.process
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from fedanon.utility import miner
from fedanon.utility.transactions import Transactions
from tests import hygiene
from tests.harness.cli import owned
from tests.harness.wait import wait_until
from tests.hygiene import PROCESS_ENV
from tests.leftovers import ROOT, RUN_ENV

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
    of each by a later test (a gRPC server in place of one that ended, a process with the same
    command line), are the fixture's."""
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
            server.stop(None).wait()
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))  # restarted
            server.add_insecure_port("127.0.0.1:0")
            server.start()
            with owned(subprocess.Popen(SLEEPER, text=True)):  # the test's restart
                assert hygiene.leaks(test, hygiene.Shared(), seconds=0) != []
                assert hygiene.leaks(test, shared, seconds=0) == []
        finally:
            server.stop(None).wait()


#: A process that starts a child of another command line, as a party daemon starts its fork
#: server and workers (whose command lines carry descriptor numbers that vary between starts).
STARTS_A_CHILD = [
    sys.executable,
    "-c",
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', sys.argv[1]]); "
    "time.sleep(120)",
]


def test_what_a_wider_fixtures_process_starts_after_the_test_restarted_it_is_the_fixtures() -> None:
    """A daemon a fixture started, restarted by a test (the same command line), starts its own
    children again, under other command lines: they are the fixture's daemon's, not the test's
    (CI named a restarted party's fork server and workers as the rejoin test's leaks)."""
    fixture = hygiene.Snapshot()
    with owned(
        subprocess.Popen([*STARTS_A_CHILD, "first"], start_new_session=True, text=True)
    ) as first:
        shared = hygiene.Shared()
        shared.adopt(fixture)
        test = hygiene.Snapshot()
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        restarted = subprocess.Popen([*STARTS_A_CHILD, "first"], start_new_session=True, text=True)
        try:
            with owned(restarted):
                # The restart and its child, once both run.
                wait_until(lambda: len(test.new_pids()) >= 2)
                assert hygiene.leaks(test, shared, seconds=0) == []
                found = hygiene.leaks(test, hygiene.Shared(), seconds=0)
                assert len([line for line in found if line.startswith("process ")]) == 2, found
        finally:
            os.killpg(restarted.pid, signal.SIGKILL)
    assert hygiene.leaks(fixture, hygiene.Shared()) == []


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


_LEAKING = """
import os, subprocess, sys
from concurrent import futures

import grpc
import pytest

SERVERS = []
SLEEPER = [sys.executable, "-c", "import time; time.sleep(8)"]  # outlives the 1 s grace


def test_clean():
    with grpc.insecure_channel("127.0.0.1:1"):
        pass


def test_leaves_a_server_running():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    server.add_insecure_port("127.0.0.1:0")
    server.start()
    SERVERS.append(server)


def test_leaves_a_channel_open():
    SERVERS.append(grpc.insecure_channel("127.0.0.1:1"))


def test_leaves_a_daemon_running():
    child = subprocess.Popen(SLEEPER)
    with open(os.environ["LEAKED_PIDS"], "a") as pids:
        print(child.pid, file=pids)


def test_forks_while_grpc_runs():
    with grpc.insecure_channel("127.0.0.1:1") as channel:
        with pytest.raises(grpc.RpcError):
            channel.unary_unary("/none/None")(b"", timeout=0.5)
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)


@pytest.fixture(scope="module")
def shared_daemon():
    child = subprocess.Popen(SLEEPER)
    yield child
    child.kill()
    child.wait()


def test_restarts_the_shared_daemon(shared_daemon):
    shared_daemon.kill()
    shared_daemon.wait()
    with open(os.environ["LEAKED_PIDS"], "a") as pids:  # the module fixture's restart
        print(subprocess.Popen(SLEEPER).pid, file=pids)
"""


def test_a_suite_run_fails_each_test_that_leaks_at_its_teardown(tmp_path: Path) -> None:
    """The suite's hooks (tests/conftest.py, loaded as a plugin) in a real pytest run: each
    leaking test errors at its teardown naming what it left; a clean test and a restart of a
    module fixture's process pass."""
    (tmp_path / "test_leaking.py").write_text(_LEAKING, encoding="utf-8")
    pids = tmp_path / "pids"
    env = {
        **os.environ,
        "FEDANON_TEST_GRACE_SECONDS": "1",
        "LEAKED_PIDS": str(pids),
        "PYTHONPATH": ROOT,
    }
    for mark in (PROCESS_ENV, RUN_ENV):  # the inner run marks its own
        env.pop(mark)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-n", "0",
               "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", str(tmp_path),
               str(tmp_path)]  # fmt: skip
    try:
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
    finally:
        for pid in map(int, pids.read_text().split() if pids.exists() else []):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    out = done.stdout
    errors = sorted(
        line.split("::")[1].split()[0] for line in out.splitlines() if line.startswith("ERROR ")
    )
    assert errors == [
        "test_forks_while_grpc_runs",
        "test_leaves_a_channel_open",
        "test_leaves_a_daemon_running",
        "test_leaves_a_server_running",
    ], out
    assert "gRPC thread 'Thread-" in out and "(_serve)' still running" in out, out
    assert "gRPC channel made at test_leaking.py:" in out, out
    assert "fork() from " in out and "test_leaking.py" in out, out
    assert f"still running: {sys.executable} -c import time; time.sleep(8)" in out, out
    assert "6 passed, 4 errors" in out, out  # a test with an error at teardown passed its call


def test_an_error_raised_as_the_miner_child_starts_leaves_no_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A signal's error raised as the watched child starts (the CLI defers it out of
    multiprocessing's code to the next line, which was the one after ``start``, before the
    ``try`` whose ``finally`` kills the child) left the child running, orphaned."""
    started: list[int] = []
    start = multiprocessing.process.BaseProcess.start

    def start_then_fail(self: multiprocessing.process.BaseProcess) -> None:
        start(self)
        started.append(self.pid or 0)
        raise RuntimeError("terminated as the child started")

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start_then_fail)
    log = Transactions.from_lists([list(range(1, 9))] * 20)  # the child's path (bound 510)
    with pytest.raises(RuntimeError, match="as the child started"):
        miner.frequent_itemsets(log, 0.5, max_itemsets=255)
    assert started and started[0] > 0
    assert not Path(f"/proc/{started[0]}").exists() or _zombie(started[0])


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
