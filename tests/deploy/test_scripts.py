"""deploy/make-certs.sh and deploy/make-demo-data.sh from a fresh checkout, without an activated
venv: they find the repository's .venv, else a python3 that imports fedanon, else stop with one
line saying what to do."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)  # the venv running the tests, which imports this checkout's fedanon
BASE_PATH = "/usr/bin:/bin"  # no venv on it, as in a new shell


def _checkout(tmp_path: Path, *, with_venv: bool) -> Path:
    """A copy of deploy/ inside a repository directory (with a .venv, or none)."""
    repo = tmp_path / "repo"
    shutil.copytree(
        REPO / "deploy",
        repo / "deploy",
        ignore=shutil.ignore_patterns("certs", "data", "out", ".env", "taxonomy.toml"),
    )
    if with_venv:
        (repo / ".venv").symlink_to(VENV, target_is_directory=True)
    return repo / "deploy"


def _run(script: Path, path: str = BASE_PATH) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHON", "FEDANON", "VIRTUAL_ENV"}}
    # Run from elsewhere: the scripts must find their own folder.
    return subprocess.run(
        ["sh", str(script)],
        env={**env, "PATH": path},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _outputs_are_made(deploy: Path) -> None:
    certs = _run(deploy / "make-certs.sh")
    assert certs.returncode == 0, certs.stderr
    for name in ("ca", "hospital-a", "hospital-b", "hospital-c", "leader"):
        assert (deploy / "certs" / f"{name}.crt").is_file()
    assert (deploy / ".env").read_text().startswith("FEDANON_UID=")
    data = _run(deploy / "make-demo-data.sh")
    assert data.returncode == 0, data.stderr
    for name in ("a", "b", "c"):
        lines = (deploy / "data" / f"hospital-{name}.csv").read_text().splitlines()
        assert len(lines) == 2001 and lines[0].startswith("patient_id,")
    assert (deploy / "config" / "taxonomy.toml").is_file()


@pytest.mark.slow  # ~20 s: each script start imports fedanon (pandas, cryptography)
def test_scripts_find_the_repository_venv(tmp_path: Path) -> None:
    _outputs_are_made(_checkout(tmp_path, with_venv=True))


@pytest.mark.slow
def test_scripts_fall_back_to_a_python3_that_imports_fedanon(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "python3"  # e.g. a system-wide install, or the image's interpreter
    wrapper.write_text(f'#!/bin/sh\nexec "{VENV / "bin" / "python"}" "$@"\n')
    wrapper.chmod(0o755)
    deploy = _checkout(tmp_path, with_venv=False)
    certs = _run(deploy / "make-certs.sh", f"{bin_dir}:{BASE_PATH}")
    assert certs.returncode == 0, certs.stderr
    assert (deploy / "certs" / "leader.crt").is_file()


def test_without_fedanon_the_scripts_say_what_to_do(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text("#!/bin/sh\nexit 1\n")  # a python3 without fedanon
    (bin_dir / "python3").chmod(0o755)
    deploy = _checkout(tmp_path, with_venv=False)
    for script in ("make-certs.sh", "make-demo-data.sh"):
        done = _run(deploy / script, f"{bin_dir}:{BASE_PATH}")
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot import fedanon" in lines[0], done.stderr
        assert "python3 -m venv .venv" in lines[0]
    assert not (deploy / "certs").exists() and not (deploy / "data").exists()
