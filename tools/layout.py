"""The installed layout: which repository folders setup.py installs as ``fedanon.<name>``.

Read from setup.py's ``NAMESPACED`` tuple (parsed, not imported: setup.py runs setup()), so the
tools that rebuild the installed layout in a temporary tree (tools/typecheck.py,
bench/mutants.py) follow setup.py instead of repeating its list.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def namespaced_folders() -> tuple[str, ...]:
    """The ``NAMESPACED`` tuple of setup.py."""
    for node in ast.parse((ROOT / "setup.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "NAMESPACED" for t in node.targets
        ):
            return tuple(ast.literal_eval(node.value))
    raise SystemExit("setup.py defines no NAMESPACED tuple")


def installed_modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module the project installs, by dotted name (``fedanon.party.ring``), to its file."""
    folders = {"fedanon": "fedanon", **{n: f"fedanon.{n}" for n in namespaced_folders()}}
    found = {}
    for folder, package in folders.items():
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root / folder).with_suffix("")
            found[".".join([package, *(p for p in rel.parts if p != "__init__")])] = path
    return found
