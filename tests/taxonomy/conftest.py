"""Shared fixtures for the taxonomy reader tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedanon.readers.datadir import data_dir


@pytest.fixture
def adult_dir() -> Path:
    """The shared Adult data (tests using it carry a skipif naming what is missing)."""
    return data_dir() / "adult"
