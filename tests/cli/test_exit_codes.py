"""Exit codes mean one thing each: input errors are 2, also where a party would have refused
them (code 4 is for a party's own failure), and unusable config files are 2 with one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.harness.cli import run_cli, snapshot

from .test_cli_output_safety import NUMERIC


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "numbers.csv").write_text(NUMERIC, encoding="utf-8")
    (tmp_path / "binary.toml").write_bytes(os.urandom(256) + b"\x00\xff")
    (tmp_path / "confdir").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("k_dims", ["2", "-1"])
def test_sim_drbt_refuses_a_projection_the_parties_would_refuse(work, k_dims):
    """numbers.csv has 4 attributes: 2 parties hold 2 each, so k must be 1 (k < d_i)."""
    before = snapshot(work)
    done = run_cli(
        "sim", "drbt", "--data", "numbers.csv", "--parties", "2", "--n-components", k_dims,
        "--out", "release.csv", "--insecure",
    )  # fmt: skip
    assert done.code == 2, done.err
    errors = [line for line in done.err_lines if "WARNING" not in line]
    assert len(errors) == 1 and errors[0].startswith("fedanon: error: --n-components: party 1 of 2")
    assert snapshot(work) == before


@pytest.mark.parametrize("config", ["confdir", "binary.toml"], ids=["directory", "binary"])
@pytest.mark.parametrize(
    "command", [["party", "serve"], ["party", "status"], ["leader", "run"]], ids=" ".join
)
def test_a_directory_or_binary_config_is_one_line_exit_2(work, command, config):
    before = snapshot(work)
    done = run_cli(*command, "--config", config)
    assert done.code == 2, done.err
    assert len(done.err_lines) == 1 and done.err.startswith("fedanon: error:"), done.err
    assert config in done.err
    assert snapshot(work) == before
