"""The main thread's timed waits (fedanon/interrupts.py): a wait in slices gives up at its
bound and never blocks longer than a slice at a time, so a signal's handler runs within a
slice. The signal cases in processes of their own: tests/cli/test_signal_safe_points.py."""

from __future__ import annotations

import time

import pytest

from fedanon.interrupts import SLICE_SECONDS, raise_safely, wait_in_slices


class Never:
    """What never comes: each wait sleeps its whole timeout; the timeouts asked are kept."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    def __call__(self, seconds: float) -> bool:
        self.asked.append(seconds)
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
    import sys

    with pytest.raises(KeyboardInterrupt):
        raise_safely(KeyboardInterrupt, sys._getframe())  # this test's frame: no lock here
