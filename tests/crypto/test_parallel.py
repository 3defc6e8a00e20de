"""The worker pool of the union's per-record work: where it runs, in what order, what it raises."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from fedanon.crypto.errors import IntegrityError
from fedanon.crypto.parallel import DEFAULT_MAX_WORKERS, Parallelism, Stream, default_workers
from tests.harness.wait import wait_while


def _pids(items: Sequence[bytes]) -> list[int]:
    """The process that handled each item."""
    return [os.getpid()] * len(items)


def _fail_on_bad(items: Sequence[bytes]) -> list[bytes]:
    for item in items:
        if item.startswith(b"bad"):
            raise IntegrityError(f"refused {item.decode()}")
    return list(items)


def test_small_batches_stay_in_process_and_large_ones_go_to_workers() -> None:
    parallelism = Parallelism(workers=2, min_records=10)
    assert set(parallelism.map(_pids, [b"x"] * 9)) == {os.getpid()}
    pids = parallelism.map(_pids, [b"x"] * 10)
    assert len(pids) == 10
    assert os.getpid() not in pids


def test_one_worker_never_starts_a_pool() -> None:
    assert set(Parallelism(workers=1, min_records=1).map(_pids, [b"x"] * 50)) == {os.getpid()}


@pytest.mark.parametrize("count", [1, 2, 7, 8, 9, 33])
def test_chunks_come_back_in_input_order(count: int) -> None:
    items = [b"%d" % i for i in range(count)]
    assert Parallelism(workers=2, min_records=1).map(list, items) == items


def test_a_worker_error_is_the_first_failing_item_in_input_order() -> None:
    items = [b"ok"] * 5 + [b"bad 1"] + [b"ok"] * 20 + [b"bad 2"]
    with pytest.raises(IntegrityError, match=r"^refused bad 1$"):
        Parallelism(workers=2, min_records=1).map(_fail_on_bad, items)


def test_configured_workers() -> None:
    assert Parallelism.configured(0).workers == default_workers()
    assert 1 <= default_workers() <= DEFAULT_MAX_WORKERS
    assert Parallelism.configured(3, 100) == Parallelism(3, 100)
    for workers, min_records in ((-1, 1), (1, 0)):
        with pytest.raises(ValueError):
            Parallelism.configured(workers, min_records)


def test_a_stream_starts_each_chunk_on_the_workers_and_keeps_the_order() -> None:
    items = [b"%d" % i for i in range(40)]
    with Stream(Parallelism(workers=2, min_records=10), _pids, expected=40) as stream:
        for start in range(0, 40, 15):
            stream.add(items[start : start + 15])
        pids = stream.results()
    assert len(pids) == 40 and os.getpid() not in pids
    with Stream(Parallelism(workers=2, min_records=10), list, expected=40) as stream:
        for start in range(0, 40, 15):
            stream.add(items[start : start + 15])
        assert stream.results() == items


def test_a_small_stream_stays_in_process_and_raises_the_first_error_in_order() -> None:
    with Stream(Parallelism(workers=2, min_records=100), _pids, expected=30) as stream:
        stream.add([b"x"] * 30)
        assert set(stream.results()) == {os.getpid()}
    for parallelism in (Parallelism(2, 1), Parallelism(1)):
        with Stream(parallelism, _fail_on_bad, expected=30) as stream:
            stream.add([b"ok"] * 10 + [b"bad 1"])
            stream.add([b"bad 2"] + [b"ok"] * 5)
            with pytest.raises(IntegrityError, match=r"^refused bad 1$"):
                stream.results()


_KILLED_OWNER = """
import sys, time
from fedanon.crypto.parallel import Parallelism, Stream

def double(items):
    return [item * 2 for item in items]

if __name__ == "__main__":
    stream = Stream(Parallelism(2, 1), double, 8)
    stream.add([b"a"] * 8)
    assert stream.results() == [b"aa"] * 8
    print(*stream._pool._processes, flush=True)
    time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


_KILLED_KEYS_OWNER = """
import time
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from fedanon.crypto.prepared_keys import PreparedLeaderKeys

if __name__ == "__main__":
    leader = X25519PrivateKey.generate().public_key().public_bytes_raw()
    keys = PreparedLeaderKeys(leader, 10_000_000)  # still preparing when the owner is killed
    keys._futures[0].result()
    print(*keys._pool._processes, "-", flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize(
    ("owner_script", "pool_size"),
    [(_KILLED_OWNER, 2), (_KILLED_KEYS_OWNER, 1)],
    ids=["stream", "prepared-keys"],
)
def test_workers_exit_when_the_process_that_made_the_pool_is_killed(
    owner_script: str, pool_size: int, tmp_path: Path
) -> None:
    """SIGKILL to the pool's owner (a leader or daemon): its workers exit, none waits forever
    on its task queue (each holds both ends of that pipe, so it never saw the end of it). The
    union's streams and the owners' leader-layer key preparation both hold such pools."""
    script = tmp_path / "owner.py"
    script.write_text(owner_script, encoding="utf-8")
    owner = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        assert owner.stdout is not None
        workers = [int(pid) for pid in owner.stdout.readline().split() if pid != "-"]
        assert len(workers) == pool_size and all(_alive(pid) for pid in workers)
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        left = wait_while(lambda: [pid for pid in workers if _alive(pid)])
    finally:
        owner.kill()
        owner.wait()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], "pool workers outlived the process that made the pool"


_SIGNALLED_LAUNCH = """
import concurrent.futures, concurrent.futures.process, multiprocessing, signal
import fedanon.crypto.parallel as parallel

class Stop(Exception):
    pass

def stop(_number, _frame):
    raise Stop

class Signalled(concurrent.futures.process.ProcessPoolExecutor):
    def submit(self, *args, **kwargs):
        future = super().submit(*args, **kwargs)
        signal.raise_signal(signal.SIGTERM)  # while the workers launch: held back till the end
        return future

if __name__ == "__main__":
    signal.signal(signal.SIGTERM, stop)
    concurrent.futures.ProcessPoolExecutor = Signalled  # the pool class a stream imports
    try:
        parallel.Stream(parallel.Parallelism(2, 1), list, 8)
    except Stop:
        print(len(multiprocessing.active_children()), flush=True)
"""


def test_a_signal_during_the_workers_launch_leaves_no_pool_behind(tmp_path: Path) -> None:
    """SIGTERM while a stream launches its workers is raised once they are launched, out of the
    constructor, so no caller holds the pool: the stream shuts it down itself (before, the
    orphaned pool shut itself down while the interpreter exited, and under load the two raced
    into a traceback after the leader's ``fedanon: terminated``)."""
    script = tmp_path / "launch.py"
    script.write_text(_SIGNALLED_LAUNCH, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "0\n", "")


def test_importing_the_module_loads_no_process_machinery() -> None:
    """Every leader and party imports this module for its configuration; `multiprocessing` and
    the process pool (about 20 ms of CPU at each start) load only when a pool or the fork server
    is first needed, which a shuffle union never does."""
    probe = (
        "import sys, fedanon.crypto.parallel as p\n"
        "assert p.Parallelism.configured().workers >= 1\n"
        "print(sorted(m for m in sys.modules if m.startswith(('multiprocessing', "
        "'concurrent.futures.process'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_the_fork_server_preloads_no_heavy_library() -> None:
    """The fork server imports its preload in a fresh interpreter at every leader's layered
    union (and every daemon's start): with numpy and `cryptography.x509` (through the count
    vectors of `wire` and the key shares) it cost 0.14 s of CPU, without them 0.05 s. Its
    workers peel, seal and open, which needs neither."""
    from fedanon.crypto.parallel import _PRELOAD

    modules = [name for name in _PRELOAD if name != "__main__"]
    assert modules  # the worker functions' module is preloaded
    probe = (
        f"import sys\nfor name in {modules!r}:\n    __import__(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('numpy', 'pandas', 'pyarrow', 'grpc') or m == 'cryptography.x509'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
