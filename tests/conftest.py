"""Hooks for the whole suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.fast_coverage import ENV, record_reached, start_tracing


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under ``FEDANON_IMPORTED_DIR``, note what the tests reach (tools/fast_coverage.py)."""
    if os.environ.get(ENV):
        start_tracing()


def pytest_sessionfinish(session: pytest.Session) -> None:
    if directory := os.environ.get(ENV):
        record_reached(Path(directory))
