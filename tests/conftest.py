"""Hooks for the whole suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.leftovers import own_start, wait_for_no_orphans
from tools.fast_coverage import ENV, record_reached, start_tracing

_STARTED = own_start()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under ``FEDANON_IMPORTED_DIR``, note what the tests reach (tools/fast_coverage.py)."""
    if os.environ.get(ENV):
        start_tracing()


def pytest_sessionfinish(session: pytest.Session) -> None:
    if directory := os.environ.get(ENV):
        record_reached(Path(directory))
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller checks once every worker has finished
    left = wait_for_no_orphans(_STARTED)
    if left:
        print("\nprocesses left behind by the test run:\n  " + "\n  ".join(left))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
