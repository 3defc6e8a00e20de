"""Keys for the layered union generated while the daemons are idle, over real daemons: the
release is the centralized one with or without them, and the pool refills after each union."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedanon.leader.sim import IDLE_KEYS_READY, UNION_SEALED, Federation, federation, split_table
from tests.distributed.conftest import Dataset, run_matches_centralized


def _last_seal(fed: Federation) -> list[str]:
    """Each daemon's last log line about sealing the union."""
    lines = []
    for daemon in fed.daemons:
        text = daemon.log.read_text(errors="replace")
        lines.append(next(line for line in reversed(text.splitlines()) if UNION_SEALED in line))
    return lines


def test_idle_daemons_seal_with_keys_made_before_the_session_and_refill(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    assert hospital_federation.wait_idle_keys(timeout=60)
    spec = hospital_data.spec(L=2, K=25, C="0.2")
    run_matches_centralized(hospital_federation, hospital_data, spec, tmp_path / "r.csv")
    # Every item's key was made before the seal (while idle, exchanged during the loop).
    assert all(line.endswith(", 0 made now") for line in _last_seal(hospital_federation))
    assert hospital_federation.wait_idle_keys(timeout=60)  # refilled once the session ended


# Slow: a federation of its own. The fresh-key seal runs in the quick subset in-process
# (tests/crypto/test_idle_keys.py: capacity zero, a union whose key worker died).
@pytest.mark.slow
def test_daemons_without_idle_keys_seal_with_fresh_keys(
    hospital_data: Dataset, tmp_path: Path
) -> None:
    dataset = hospital_data.head(900)
    table = dataset.table
    parts = split_table(table, 3, "random", seed=2)
    with federation(parts, dataset.taxonomy_path, workdir=tmp_path / "fed", idle_keys=0) as fed:
        run_matches_centralized(fed, dataset, dataset.spec(L=2, K=15, C="0.25"), tmp_path / "r.csv")
        assert all(", 0 made while idle" in line for line in _last_seal(fed))
        assert not any(IDLE_KEYS_READY in d.log.read_text() for d in fed.daemons)
