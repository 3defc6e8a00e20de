"""deploy/requirements.lock pins exactly what pyproject.toml asks for, every file hashed.

The image installs its dependencies with ``pip install --require-hashes`` from the lock
(deploy/Dockerfile), so a dependency added to pyproject.toml but not locked (or locked at a
release outside its range) would build an image that differs from what the tests ran. The lock
is regenerated with deploy/lock.sh.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
PYPROJECT = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text())
LOCK = DEPLOY / "requirements.lock"
BUILD_LOCK = DEPLOY / "requirements-build.lock"
# pip-compile's annotation of a requirement taken straight from pyproject.toml
DIRECT = "fedanon (../pyproject.toml)"
BUILD_DIRECT = "-r requirements-build.in"


def entries(text: str) -> dict[str, tuple[Version, int, set[str]]]:
    """name -> (pinned version, number of hashes, what required it) for each locked entry."""
    out: dict[str, tuple[Version, int, set[str]]] = {}
    for block in re.split(r"\n(?=\S)", text):
        pin = re.match(r"([A-Za-z0-9._-]+)==(\S+)", block)
        if pin is None:
            continue
        via = set(re.findall(r"^\s+#\s+(?:via )?(\S.*?)\s*$", block, flags=re.M)) - {"via"}
        hashes = len(re.findall(r"--hash=sha256:[0-9a-f]{64}\b", block))
        out[canonicalize_name(pin[1])] = (Version(pin[2]), hashes, via)
    return out


def disagreements(requirements: list[str], lock_text: str, direct: str) -> list[str]:
    """What makes `lock_text` disagree with `requirements` (empty when they agree)."""
    locked = entries(lock_text)
    wanted = {str(canonicalize_name(r.name)): r for r in map(Requirement, requirements)}
    problems = [f"{name} has no sha256 hash" for name, e in locked.items() if e[1] == 0]
    for name, req in wanted.items():
        if name not in locked:
            problems.append(f"{name} is required but not locked")
        elif not req.specifier.contains(locked[name][0], prereleases=True):
            problems.append(f"{name}=={locked[name][0]} is outside {req.specifier}")
    for name, (_, _, via) in locked.items():
        if direct in via and name not in wanted:
            problems.append(f"{name} is locked as a direct requirement but no longer required")
    return problems


def test_lock_agrees_with_pyproject_runtime_dependencies() -> None:
    assert disagreements(PYPROJECT["project"]["dependencies"], LOCK.read_text(), DIRECT) == []
    locked_direct = {n for n, e in entries(LOCK.read_text()).items() if DIRECT in e[2]}
    wanted = {canonicalize_name(Requirement(r).name) for r in PYPROJECT["project"]["dependencies"]}
    assert locked_direct == wanted


def test_build_lock_agrees_with_the_build_system() -> None:
    requires = PYPROJECT["build-system"]["requires"]
    assert disagreements(requires, BUILD_LOCK.read_text(), BUILD_DIRECT) == []


@pytest.mark.parametrize(
    "breakage, message",
    [
        (lambda t: re.sub(r"\ngrpcio==[^\n]*(\n\s+--hash[^\n]*)*", "", t), "grpcio is required"),
        (lambda t: re.sub(r"\nnumpy==\S+", "\nnumpy==1.26.4", t), "numpy==1.26.4 is outside"),
        (lambda t: re.sub(r"(\nrich==\S+) \\(\n\s+--hash[^\n]*)+", r"\1", t), "rich has no"),
    ],
)
def test_lock_check_rejects_broken_copy(breakage, message) -> None:
    broken = breakage(LOCK.read_text())
    assert broken != LOCK.read_text()
    found = disagreements(PYPROJECT["project"]["dependencies"], broken, DIRECT)
    assert any(message in p for p in found), found


def test_lock_check_rejects_a_dependency_pyproject_dropped() -> None:
    requirements = [r for r in PYPROJECT["project"]["dependencies"] if not r.startswith("rich")]
    found = disagreements(requirements, LOCK.read_text(), DIRECT)
    assert found == ["rich is locked as a direct requirement but no longer required"]


def test_dockerfile_installs_only_hash_checked_locks() -> None:
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")  # joined continuations
    installs = re.findall(r"pip install ([^\n&]*)", text)
    assert len(installs) == 3
    for args in installs:
        if "-r " in args:
            assert "--require-hashes" in args, args
        else:  # fedanon's own wheel, built from the context: nothing else may come along
            assert "--no-deps" in args and "--no-index" in args, args
    locks = set(re.findall(r"-r (deploy/\S+\.lock)", text))
    assert locks == {"deploy/requirements.lock", "deploy/requirements-build.lock"}
