"""The configuration tests' shared fixture: one set of data, taxonomy and certificates per
test module (tests/config/configs.py builds it; the documents refer to it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.configs import make_material


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_material(tmp_path_factory.mktemp("material"))
