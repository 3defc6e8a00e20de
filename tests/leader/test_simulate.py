"""`fedanon.leader.simulate`: the distributed LKC job from Python equals the central release.

Real party daemons in their own processes, on loopback, with mutual TLS (leader/sim.py); the
federation is stopped on every exit path by the context manager the function uses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import fedanon
from fedanon.errors import FedanonError
from fedanon.leader.simulate import simulate
from fedanon.synth import generate_hospital, hospital_taxonomy_path


def _rows(table) -> list[tuple[str, ...]]:
    return sorted(map(tuple, table.astype(str).to_numpy().tolist()))


def test_simulate_releases_the_central_release_and_its_steward_page(tmp_path: Path) -> None:
    df = generate_hospital(600, seed=11)
    tax = hospital_taxonomy_path()
    distributed = simulate(df, taxonomy=tax, parties=3, L=2, k=20, C=0.5)
    central = fedanon.anonymize_lkc(df, taxonomy=tax, L=2, k=20, C=0.5)
    assert distributed.report["privacy_check"]["ok"] is True
    assert list(distributed.table.columns) == list(central.table.columns)
    assert _rows(distributed.table) == _rows(central.table)
    assert distributed.preserves_order is False  # the secure union shuffles the rows
    assert distributed.report["parties"] == ["hospital-1", "hospital-2", "hospital-3"]
    page = distributed.to_html(tmp_path / "report.html").read_text(encoding="utf-8")
    assert "fedanon.leader.simulate" in page and "holds" in page


def test_simulate_refuses_a_taxonomy_object_in_one_line() -> None:
    df = generate_hospital(50, seed=1)
    loaded = fedanon.load_taxonomy(hospital_taxonomy_path())
    with pytest.raises(FedanonError, match="taxonomy: give the file's path"):
        simulate(df, taxonomy=loaded)
