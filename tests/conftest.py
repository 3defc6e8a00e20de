"""Hooks for the whole suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.fast_coverage import ENV, record_imported


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under ``FEDANON_IMPORTED_DIR``, list the modules imported here (tools/fast_coverage.py)."""
    if directory := os.environ.get(ENV):
        record_imported(Path(directory))
