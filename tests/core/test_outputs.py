"""CommandOutputs on its own: what changes between the claim and the write is still handled."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedanon.errors import FedanonError
from fedanon.outputs import CommandOutputs


def test_directory_replaced_by_a_file_after_the_claim_is_a_one_line_error(tmp_path: Path):
    outputs = CommandOutputs()
    outputs.claim("--out", tmp_path / "new" / "r.json")
    (tmp_path / "new").write_text("someone else's file\n")
    with pytest.raises(FedanonError, match="none was written"), outputs.writing() as staged:
        staged.json(tmp_path / "new" / "r.json", {})
    assert (tmp_path / "new").read_text() == "someone else's file\n"


def test_a_file_cannot_be_both_an_output_and_the_directory_of_another(tmp_path: Path):
    outputs = CommandOutputs()
    outputs.claim("--out", tmp_path / "a")
    with pytest.raises(FedanonError, match="is the --out output, not a directory"):
        outputs.claim("--report", tmp_path / "a" / "r.json")
    other = CommandOutputs()
    other.claim("--report", tmp_path / "b" / "r.json")
    with pytest.raises(FedanonError, match="is a directory"):
        other.claim("--out", tmp_path / "b")


def test_unclaimed_targets_cannot_be_staged(tmp_path: Path):
    with pytest.raises(ValueError, match="was not claimed"), CommandOutputs().writing() as staged:
        staged.json(tmp_path / "r.json", {})
    assert list(tmp_path.iterdir()) == []
