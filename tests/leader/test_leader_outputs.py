"""The leader refuses unwritable release and report paths before it contacts any party.

A job.toml ``out`` that is a symlink to a directory used to be replaced by the release at the
end of the job; now the leader checks its outputs first (through the same helper as the CLI), so
nothing is replaced and no party is asked to do work for a job whose result cannot be written.
The parties listed here do not exist: reaching them would be a different error.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fedanon.errors import FedanonError
from fedanon.federation.config import Hop
from fedanon.leader.kinds.drbt import DRBTLeaderJob, run_drbt
from fedanon.leader.kinds.lkc import LKCLeaderJob, run_lkc, spec_from_table
from fedanon.synth import hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy

NOWHERE = [Hop(f"hospital-{i}", f"127.0.0.1:{i}") for i in (1, 2, 3)]


def _lkc_job(out: Path, report: Path | None = None) -> LKCLeaderJob:
    taxonomy = load_taxonomy(hospital_taxonomy_path())
    spec = spec_from_table({"L": 2, "K": 5, "C": "0.5"}, taxonomy, "test")
    return LKCLeaderJob(
        name="leader",
        taxonomy=taxonomy,
        spec=spec,
        parties=NOWHERE,
        tls=None,
        out=out,
        report=report,
        rpc_seconds=1,
    )


@pytest.fixture
def place(tmp_path: Path) -> Path:
    (tmp_path / "releases").mkdir()
    (tmp_path / "releases" / "old.csv").write_text("kept\n")
    os.symlink(tmp_path / "releases", tmp_path / "out-link")
    return tmp_path


@pytest.mark.parametrize("runner", ["lkc", "drbt"])
@pytest.mark.parametrize(
    ("out", "report", "message"),
    [
        ("out-link", None, "out {place}/out-link: is a directory"),
        ("releases", None, "out {place}/releases: is a directory"),
        ("r.csv", "out-link", "report {place}/out-link: is a directory"),
        ("r.csv", "/proc/fedanon/r.json", "report /proc/fedanon/r.json: cannot create files in"),
        ("r.csv", "r.csv", "report {place}/r.csv: is also the out output"),
    ],
    ids=[
        "out-symlink-to-dir",
        "out-dir",
        "report-symlink-to-dir",
        "report-in-proc",
        "report-is-out",
    ],
)
def test_unwritable_outputs_are_refused_before_the_session(place, runner, out, report, message):
    report_path = None if report is None else place / report
    if runner == "lkc":
        job = _lkc_job(place / out, report_path)
        run = run_lkc
    else:
        job = DRBTLeaderJob(
            parties=NOWHERE,
            tls=None,
            out=place / out,
            id_column="id",
            report=report_path,
            rpc_seconds=1,
        )
        run = run_drbt
    with pytest.raises(FedanonError, match="^" + message.format(place=place)):
        run(job)
    assert (place / "out-link").is_symlink()
    assert sorted(p.name for p in place.rglob("*")) == ["old.csv", "out-link", "releases"]
    assert (place / "releases" / "old.csv").read_text() == "kept\n"
