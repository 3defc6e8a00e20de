"""Which project modules the quick test subset never reaches (issue #23 item 5).

A module that only slow tests (or only daemon subprocesses) reach has no fast test: a fault in
it waits for the full suite. This tool runs the quick subset with ``FEDANON_IMPORTED_DIR`` set;
tests/conftest.py then, in every pytest process (the controller and each xdist worker):

* from the end of collection on, notes the file of every Python function that runs (a global
  ``sys.settrace`` hook that only looks at calls, no line tracing: module bodies run by an
  import are left out, so a module imported at collection by a slow test's module does not
  count);
* at the end, writes the ``fedanon`` modules in ``sys.modules`` and those files to a list of its
  own in that directory.

The union of the lists is compared with every module setup.py installs
(tools/layout.installed_modules). Two counts come out: modules never imported, and modules
imported but none of whose functions ran in a test (modules that define no function are left out
of the second count). Code run only inside daemon subprocesses counts as not reached: no
in-process fast test reaches it.

    python tools/fast_coverage.py                 # runs pytest -n 2 -m "not slow", then reports
    python tools/fast_coverage.py --from DIR      # reports on the lists an earlier run left in DIR
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``tools`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.layout import ROOT, installed_modules

#: The environment variable that makes tests/conftest.py record what this process reached.
ENV = "FEDANON_IMPORTED_DIR"

_ran: set[str] = set()  # files of the functions that ran since start_tracing()


def _note_call(frame: FrameType, event: str, arg: Any) -> None:
    """Global trace hook: note the function's file; return None so no line is traced."""
    if frame.f_code.co_name != "<module>":
        _ran.add(frame.f_code.co_filename)


def start_tracing() -> None:
    """Note the file of every function that runs from now on, in this thread and new ones."""
    threading.settrace(_note_call)
    sys.settrace(_note_call)


def record_reached(directory: Path) -> None:
    """Write this process's imported ``fedanon`` modules and the files whose functions ran."""
    sys.settrace(None)
    threading.settrace(None)
    names = sorted(n for n in sys.modules if n == "fedanon" or n.startswith("fedanon."))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"imported-{os.getpid()}.txt").write_text("\n".join(names) + "\n", "utf-8")
    (directory / f"ran-{os.getpid()}.txt").write_text("\n".join(sorted(_ran)) + "\n", "utf-8")


def _defines_a_function(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(tree))


def unreached(directory: Path) -> tuple[list[str], list[str]]:
    """(modules no process imported, imported modules with functions none of which ran)."""
    imported: set[str] = set()
    ran: set[str] = set()
    for listing in directory.glob("imported-*.txt"):
        imported.update(listing.read_text("utf-8").split())
    for listing in directory.glob("ran-*.txt"):
        ran.update(str(Path(f).resolve()) for f in listing.read_text("utf-8").split())
    if not imported:
        raise SystemExit(f"no module lists in {directory}: was {ENV} set for the run?")
    modules = installed_modules()
    never_imported = sorted(set(modules) - imported)
    never_ran = sorted(
        name
        for name, path in modules.items()
        if name in imported and str(path.resolve()) not in ran and _defines_a_function(path)
    )
    return never_imported, never_ran


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, help="lists from an earlier run")
    parser.add_argument("pytest_args", nargs="*", help='pytest arguments (-n 2 -m "not slow")')
    args = parser.parse_args(argv)
    if args.source is None:
        args.source = Path(tempfile.mkdtemp(prefix="fedanon-reached-"))
        selection = args.pytest_args or ["-n", "2", "-m", "not slow"]
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection],
            cwd=ROOT,
            env={**os.environ, ENV: str(args.source)},
            check=False,
        )
    never_imported, never_ran = unreached(args.source)
    total = len(installed_modules())
    print(f"{len(never_imported)} of {total} modules never imported by the run:")
    print("".join(f"  {name}\n" for name in never_imported), end="")
    print(f"{len(never_ran)} of {total} modules imported, but none of their functions ran:")
    print("".join(f"  {name}\n" for name in never_ran), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
