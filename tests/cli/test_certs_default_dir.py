"""`fedanon certs init` and `certs issue NAME` work without `--dir` (the README's lines)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.cli import run_cli


def test_certs_default_to_the_certs_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli("certs", "init").code == 0
    issued = run_cli("certs", "issue", "hospital-1")
    assert issued.code == 0 and "issued party certificate certs/hospital-1.crt" in issued.out
    leader = run_cli("certs", "issue", "leader")
    assert leader.code == 0 and "issued leader certificate certs/leader.crt" in leader.out
    assert sorted(p.name for p in (tmp_path / "certs").iterdir()) == [
        "ca.crt",
        "ca.key",
        "hospital-1.crt",
        "hospital-1.key",
        "leader.crt",
        "leader.key",
    ]


def test_issue_without_a_ca_in_the_default_directory_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    done = run_cli("certs", "issue", "hospital-1")
    assert done.code != 0
    assert done.err_lines == [
        "fedanon: error: no CA key in certs: run `fedanon certs init --dir certs` first"
    ]
