"""The main thread's timed waits and the signal-safe raise (fedanon/interrupts.py): a wait in
slices gives up at its bound and never blocks longer than a slice at a time; an error whose
signal met the main thread inside locking code is raised at the first line outside it, where
the caller's ``with`` owns the lock. The signals themselves, in processes of their own:
tests/cli/test_signal_safe_points.py."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from pathlib import Path
from types import FrameType, ModuleType

import pytest

from fedanon import interrupts
from fedanon.interrupts import SLICE_SECONDS, raise_safely, wait_in_slices


class Never:
    """What never comes: each wait sleeps its whole timeout; the timeouts asked are kept (a
    wait that outlives its bound by many slices fails the test instead of hanging it)."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    def __call__(self, seconds: float) -> bool:
        self.asked.append(seconds)
        assert len(self.asked) <= 50, "the wait went on past its bound"
        time.sleep(seconds)
        return False


def test_a_bounded_wait_gives_up_at_its_bound_a_slice_at_a_time() -> None:
    never = Never()
    began = time.monotonic()
    assert wait_in_slices(never, 0.5) is False
    took = time.monotonic() - began
    assert 0.5 <= took < 5.0  # slack for a loaded machine, far below a wait that never ends
    assert len(never.asked) >= 3 and max(never.asked) <= SLICE_SECONDS
    assert sum(never.asked) == pytest.approx(0.5, abs=0.1)


def test_a_wait_says_what_came_as_soon_as_it_came() -> None:
    answers = iter([False, False, True])
    asked: list[float] = []

    def third_time(seconds: float) -> bool:
        asked.append(seconds)
        return next(answers)

    assert wait_in_slices(third_time, 60.0) is True
    assert len(asked) == 3 and all(0 < s <= SLICE_SECONDS for s in asked)
    assert wait_in_slices(lambda _s: True) is True  # unbounded: the first slice that sees it


def test_a_bound_already_past_asks_nothing() -> None:
    never = Never()
    assert wait_in_slices(never, 0.0) is False
    assert never.asked == []


def test_a_signal_outside_locking_code_raises_at_once() -> None:
    with pytest.raises(KeyboardInterrupt):
        raise_safely(KeyboardInterrupt, None)
    with pytest.raises(KeyboardInterrupt):
        raise_safely(KeyboardInterrupt, sys._getframe())  # this test's frame: no lock here


# A lock's `__enter__` in "locking code" that runs lines after its acquire (as a module of
# _locking_files may): the signal's handler runs right after the acquire.
_LOCKING = """
import sys


class Entering:
    def __init__(self, lock, on_signal, reached):
        self.lock, self.on_signal, self.reached = lock, on_signal, reached

    def __enter__(self):
        self.lock.acquire()
        self.on_signal(sys._getframe())  # the handler, run here by the interpreter
        self.reached.append("acquired")
        self.reached.append("entered")
        return self

    def __exit__(self, *exc):
        self.lock.release()
"""


def _locking_module(tmp_path: Path) -> ModuleType:
    path = tmp_path / "locking_code.py"
    path.write_text(_LOCKING, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("locking_code", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_deferred_error_is_raised_at_the_first_line_outside_the_locking_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _locking_module(tmp_path)
    monkeypatch.setattr(interrupts, "_locking_files", lambda: frozenset([module.__file__]))
    lock = threading.Lock()
    reached: list[str] = []

    def on_signal(frame: FrameType) -> None:
        raise_safely(KeyboardInterrupt, frame)

    try:
        with pytest.raises(KeyboardInterrupt), module.Entering(lock, on_signal, reached):
            reached.append("body")  # the first line outside: raised here, the lock owned
    finally:
        sys.settrace(None)
    # __enter__ ran to its end (raised inside it, the `with` would never own the lock) ...
    assert reached == ["acquired", "entered"]
    assert not lock.locked()  # ... so its __exit__ let the lock go
