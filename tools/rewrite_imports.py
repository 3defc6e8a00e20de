"""Rewrite module names and file paths from the old layout to the one of issue #11.

The restructure moved modules (``fedanon.lkc`` -> ``fedanon.algorithms.tds``, ...) and installed
the top-level folders ``crypto/``, ``party/``, ``leader/``, ``protos/`` and ``federation/`` under
the ``fedanon`` namespace. Branches written against the old layout are brought over by running
this script on their tree; it is idempotent (a second run changes nothing) and prints every
change, so it can be run before a merge and again after resolving conflicts::

    python tools/rewrite_imports.py [--root PATH] [--move] [--dry-run] [--no-sort]

What it rewrites, in ``*.py``, ``*.md``, ``*.toml``, ``*.yaml``, ``*.yml``, ``*.sh``,
``Dockerfile*`` and ``.ci/run``:

- module names in ``import`` / ``from ... import`` lines;
- dotted module names anywhere else (strings such as ``python -m protos.generate``,
  ``monkeypatch.setattr("leader.run.x", ...)``, docs). A bare old top-level name (``party``) is
  only rewritten when it is followed by one of that package's real submodules
  (``party.daemon``), so prose and file names such as ``party.toml`` are left alone;
- repository paths of moved files (``fedanon/lkc/engine.py`` -> ``fedanon/algorithms/tds/...``).

Renamed imports change the order ruff's isort rule expects (``crypto`` becomes first-party
``fedanon.crypto``), so the changed Python files are re-sorted with ``ruff check --fix --select I``
unless ``--no-sort`` is given (ruff must be on PATH or beside the running Python). ``--move``
also ``git mv``-s files still found at an old location (for example a module a branch
added to ``fedanon/lkc/``) to the new one.

Bringing a branch over (so that only its real changes can conflict): on the branch, merge the
restructure's rewrite commit (the second commit of the r1-layout branch, "rewrite imports and
module names"), resolve every conflicted file by taking the branch's side
(``git checkout --ours FILE``), run this script with ``--move``, commit; then merge the rest.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

#: Old dotted module prefix -> new one. A name matches when it equals the key or continues
#: with ``.``; longer keys are tried first.
MODULES: dict[str, str] = {
    "fedanon.lkc": "fedanon.algorithms.tds",
    "fedanon.drbt": "fedanon.algorithms.drbt",
    "fedanon.checker": "fedanon.models.lkc",
    "fedanon.c45": "fedanon.utility.c45",
    "fedanon.metrics": "fedanon.utility.metrics",
    "fedanon.evaluation": "fedanon.utility.evaluation",
    "fedanon.charts": "fedanon.utility.charts",
    "fedanon.table_io": "fedanon.readers.table_io",
    "fedanon.datadir": "fedanon.readers.datadir",
    "fedanon.wire": "fedanon.federation.wire",
    "fedanon.transport": "fedanon.federation.transport",
    "fedanon.tls": "fedanon.federation.tls",
    "fedanon.keyshares": "fedanon.federation.keyshares",
    "crypto": "fedanon.crypto",
    "party": "fedanon.party",
    "leader": "fedanon.leader",
    "protos": "fedanon.protos",
}

#: Old repository path -> new one (directories end with ``/``). The top-level folders crypto/,
#: party/, leader/, protos/ did not move; only their installed import names changed.
PATHS: dict[str, str] = {
    "fedanon/lkc/": "fedanon/algorithms/tds/",
    "fedanon/drbt/": "fedanon/algorithms/drbt/",
    "fedanon/checker.py": "fedanon/models/lkc.py",
    "fedanon/c45.py": "fedanon/utility/c45.py",
    "fedanon/metrics.py": "fedanon/utility/metrics.py",
    "fedanon/evaluation.py": "fedanon/utility/evaluation.py",
    "fedanon/charts.py": "fedanon/utility/charts.py",
    "fedanon/table_io.py": "fedanon/readers/table_io.py",
    "fedanon/datadir.py": "fedanon/readers/datadir.py",
    "fedanon/wire.py": "federation/wire.py",
    "fedanon/transport.py": "federation/transport.py",
    "fedanon/tls.py": "federation/tls.py",
    "fedanon/keyshares.py": "federation/keyshares.py",
}

#: Top-level folders installed under ``fedanon.``: their submodules are read from the tree.
NAMESPACED = ("crypto", "party", "leader", "protos")

SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".sh", ".txt"}
SKIP_DIRS = {".git", ".venv", "build", "dist", "__pycache__", ".mypy_cache", ".ruff_cache"}
SKIP_FILES = {"tools/rewrite_imports.py", "docs/architecture.md"}

#: ``from X import`` or ``import X`` at the start of a line (``X`` is group 2).
IMPORT_LINE = re.compile(
    r"^(\s*from\s+|\s*import\s+)([\w.]+)(?=\s+import\b|\s+as\b|\s*,|\s*$)", re.MULTILINE
)


def submodules(root: Path, package: str) -> set[str]:
    """The module and subpackage names directly inside a top-level folder of the tree."""
    folder = root / package
    if not folder.is_dir():
        return set()
    names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return names


def rename_module(name: str) -> str:
    """`name` under the new layout (unchanged when no mapping applies)."""
    for old in sorted(MODULES, key=len, reverse=True):
        if name == old or name.startswith(old + "."):
            return MODULES[old] + name[len(old) :]
    return name


def dotted_pattern(root: Path) -> re.Pattern[str]:
    """Old dotted names outside import lines, not preceded by a name character or a dot."""
    alternatives = []
    for old in sorted(MODULES, key=len, reverse=True):
        if "." in old:
            alternatives.append(re.escape(old) + r"(?![\w])")
        else:
            subs = sorted(submodules(root, old), key=len, reverse=True)
            if subs:
                alternatives.append(
                    re.escape(old) + r"\.(?:" + "|".join(map(re.escape, subs)) + r")(?![\w])"
                )
    return re.compile(r"(?<![\w.\-/])(?:" + "|".join(alternatives) + ")")


PATH_PATTERN = re.compile(
    r"(?<![\w./\-])(?:"
    + "|".join(
        re.escape(old) + ("" if old.endswith("/") else r"(?![\w])")
        for old in sorted(PATHS, key=len, reverse=True)
    )
    + ")"
)


def rewrite_text(text: str, dotted: re.Pattern[str]) -> str:
    """`text` with import lines, dotted module names and moved paths rewritten."""

    def import_line(m: re.Match[str]) -> str:
        if m.group(1).lstrip().startswith("from") and not text.startswith(" import", m.end()):
            return m.group(0)
        return m.group(1) + rename_module(m.group(2))

    text = IMPORT_LINE.sub(import_line, text)
    text = dotted.sub(lambda m: rename_module(m.group(0)), text)
    return PATH_PATTERN.sub(lambda m: PATHS[m.group(0)], text)


def candidate_files(root: Path) -> list[Path]:
    """Text files of the tree that may name modules or paths."""
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        if not path.is_file() or rel.as_posix() in SKIP_FILES:
            continue
        if (
            path.suffix in SUFFIXES
            or path.name.startswith("Dockerfile")
            or rel.as_posix() == ".ci/run"
        ):
            found.append(path)
    return found


def move_leftovers(root: Path, dry_run: bool) -> list[tuple[str, str]]:
    """`git mv` every tracked file still at an old path to its new path."""
    tracked = subprocess.run(
        ["git", "-C", str(root), "ls-files"], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    moves = []
    for rel in tracked:
        new = PATH_PATTERN.sub(lambda m: PATHS[m.group(0)], rel)
        if new != rel and rel.startswith(tuple(PATHS)):
            moves.append((rel, new))
    for old, new in moves:
        print(f"move {old} -> {new}")
        if not dry_run:
            (root / new).parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "-C", str(root), "mv", old, new], check=True)
    return moves


def sort_imports(paths: list[Path]) -> None:
    """Re-sort the import blocks of `paths` with ruff (the only rule whose fix is applied)."""
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    if ruff is None:
        print(
            "ruff not found: import blocks left unsorted (run ruff check --fix --select I)",
            file=sys.stderr,
        )
        return
    subprocess.run(
        [
            ruff,
            "check",
            "--quiet",
            "--fix-only",
            "--select",
            "I",
            "--config",
            "lint.isort.known-first-party = ['fedanon']",
            *map(str, paths),
        ],
        check=False,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root", type=Path, default=Path.cwd(), help="repository root (default: .)"
    )
    parser.add_argument("--move", action="store_true", help="also git mv files left at old paths")
    parser.add_argument("--dry-run", action="store_true", help="print changes, write nothing")
    parser.add_argument("--no-sort", action="store_true", help="do not re-sort imports with ruff")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.move:
        move_leftovers(root, args.dry_run)
    dotted = dotted_pattern(root)
    changed: list[Path] = []
    for path in candidate_files(root):
        try:
            old = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite_text(old, dotted)
        if new == old:
            continue
        changed.append(path)
        rel = path.relative_to(root).as_posix()
        for number, (a, b) in enumerate(zip(old.splitlines(), new.splitlines(), strict=True), 1):
            if a != b:
                print(f"{rel}:{number}: {a.strip()}  ->  {b.strip()}")
        if not args.dry_run:
            path.write_text(new, encoding="utf-8")
    python_files = [p for p in changed if p.suffix == ".py"]
    if python_files and not (args.dry_run or args.no_sort):
        sort_imports(python_files)
    print(
        f"{len(changed)} file(s) {'would change' if args.dry_run else 'changed'}", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
