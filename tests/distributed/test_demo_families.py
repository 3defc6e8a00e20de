"""``fedanon demo`` runs every job family on its daemons (LKC, then the release's BE/CE/UE,
federated C4.5 and federated kACTUS), each compared with its centralized result; the report and
the demo's folder show that they ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.cli import run_cli, run_cli_process

pytestmark = pytest.mark.slow


def test_the_demo_runs_every_family_and_each_equals_its_centralized_result(
    tmp_path: Path,
) -> None:
    out_dir = tmp_path / "demo"
    done = run_cli_process(
        "demo", "--rows", "300", "--transport", "direct", "--json", "--out-dir", out_dir,
        timeout=400,
    )  # fmt: skip
    assert done.code == 0, done.err[-2000:]
    report = json.loads(done.out)
    families = report["families"]
    assert list(families) == ["lkc", "evaluate", "c45", "kactus"]
    assert all(f["equals_centralized"] is True for f in families.values())
    figures = json.loads((out_dir / "figures.json").read_text("utf-8"))
    assert figures["n_train"] + figures["n_test"] == 300
    assert {k: families["evaluate"][k] for k in figures} == figures
    assert families["c45"]["nodes"] >= 1 and families["c45"]["rounds"] >= 1
    assert (out_dir / "tree.txt").read_text("utf-8").strip()
    assert families["kactus"]["k_anonymous"] is True
    assert (out_dir / "kactus-release.csv").read_text("utf-8").count("\n") == 301
    for family in ("evaluate", "c45", "kactus"):
        assert f"family: {family}: done; equals the centralized result" in done.err


def test_the_demo_runs_only_the_families_named(tmp_path: Path) -> None:
    unknown = run_cli("demo", "--families", "lkc,drbtx", "--out-dir", tmp_path / "d")
    assert unknown.code != 0
    assert unknown.err.strip().splitlines() == [
        "fedanon: error: --families: 'drbtx' unknown (known: lkc, evaluate, c45, kactus)"
    ], unknown.err
    assert not (tmp_path / "d").exists()
