"""The worker pool of the union's per-record work: where it runs, in what order, what it raises."""

from __future__ import annotations

import os
from collections.abc import Sequence

import pytest

from fedanon.crypto.errors import IntegrityError
from fedanon.crypto.parallel import DEFAULT_MAX_WORKERS, Parallelism, Stream, default_workers


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
