"""The one way a test waits for something that happens on its own time: poll, bounded.

What a test observes after a kill, a close, a stop or a signal happens asynchronously (the
kernel delivers SIGKILL later, a process re-parented to init ends when it is next scheduled,
a server's threads end after ``stop`` returns), and on a loaded CI machine (two cores, ``pytest
-n 2`` beside other work) "later" can be seconds. So a test never asserts such an outcome right
after the action, nor after a fixed sleep: it polls for it up to a generous bound and then
asserts exactly what it asserted before. The bound only says how long a correct outcome may be
late; it never makes the assertion weaker, and a wrong outcome still fails (after the bound).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: How long a correct outcome may be late on a loaded machine before the test says it never came.
PATIENCE_SECONDS = 60.0
#: The pause between two looks (short: a test waits no longer than the outcome takes).
INTERVAL_SECONDS = 0.05


def wait_until(
    condition: Callable[[], T],
    seconds: float = PATIENCE_SECONDS,
    interval: float = INTERVAL_SECONDS,
) -> T:
    """Look at `condition` until it is true or `seconds` pass; its last value (the caller
    asserts on it: ``assert wait_until(...)``)."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def wait_while(
    probe: Callable[[], T],
    seconds: float = PATIENCE_SECONDS,
    interval: float = INTERVAL_SECONDS,
) -> T:
    """Look at `probe` until it is empty or false (what is left: live pids, open files) or
    `seconds` pass; its last value, so the caller's assertion names what was left."""
    deadline = time.monotonic() + seconds
    while True:
        value = probe()
        if not value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def holds_for(
    condition: Callable[[], object],
    seconds: float,
    interval: float = INTERVAL_SECONDS,
) -> bool:
    """Whether `condition` is true at every look for `seconds` (at least one look): the other
    half of waiting, for what must NOT happen within a span (no background work while busy, a
    file kept while its leader is heard). Unlike a fixed sleep then one look, it fails at the
    first look that sees the outcome, and it never stops early when the condition holds."""
    deadline = time.monotonic() + seconds
    while True:
        if not condition():
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(interval)
