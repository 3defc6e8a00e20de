"""Run mypy over the tree as it is installed: the namespaced folders under ``fedanon/``.

setup.py installs ``crypto/``, ``party/``, ``leader/``, ``protos/`` and ``federation/`` as
``fedanon.<name>`` through ``package_dir``. An editable install resolves those names with an
import hook that mypy cannot see, so mypy run on the repository finds no ``fedanon.crypto``.
This script copies the sources into a temporary view laid out as installed (``fedanon/crypto``
and so on, plus ``bench/``, ``tests/`` and ``tools/``) and runs mypy there with the project's
configuration; error paths are relative to that view (``fedanon/crypto/tls.py`` is
``crypto/tls.py``).
Extra arguments go to mypy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make `tools` importable

from tools.layout import namespaced_folders  # noqa: E402


def main() -> int:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache")
    with tempfile.TemporaryDirectory(prefix="fedanon-typecheck-") as tmp:
        view = Path(tmp)
        shutil.copytree(ROOT / "fedanon", view / "fedanon", ignore=ignore)
        for name in namespaced_folders():
            shutil.copytree(ROOT / name, view / "fedanon" / name, ignore=ignore)
        for name in ("bench", "tests", "tools"):
            shutil.copytree(ROOT / name, view / name, ignore=ignore)
        command = [
            sys.executable, "-m", "mypy",
            "--config-file", str(ROOT / "pyproject.toml"),
            "--cache-dir", str(ROOT / ".mypy_cache"),
            *sys.argv[1:],
        ]  # fmt: skip
        return subprocess.run(command, cwd=view, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
