"""Which project modules the quick test subset never imports (issue #23 item 5).

A module that only slow tests (or only daemon subprocesses) import has no fast test: a fault in
it waits for the full suite. This tool runs the quick subset with ``FEDANON_IMPORTED_DIR`` set;
tests/conftest.py then writes, at the end of every pytest process (the controller and each xdist
worker), the ``fedanon`` modules in that process's ``sys.modules`` after collection and the run.
The union of those lists is compared with every module setup.py installs
(tools/layout.installed_modules). Modules imported only inside daemon subprocesses count as not
imported: they are reached by no in-process test.

    python tools/fast_coverage.py                 # runs pytest -n 2 -m "not slow", then reports
    python tools/fast_coverage.py --from DIR      # reports on lists an earlier run left in DIR
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``tools`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.layout import ROOT, installed_modules

#: The environment variable that makes tests/conftest.py write its process's imported modules.
ENV = "FEDANON_IMPORTED_DIR"


def record_imported(directory: Path) -> None:
    """Write the ``fedanon`` modules this process imported to a file of its own in `directory`."""
    names = sorted(n for n in sys.modules if n == "fedanon" or n.startswith("fedanon."))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"imported-{os.getpid()}.txt").write_text("\n".join(names) + "\n", "utf-8")


def never_imported(directory: Path) -> list[str]:
    """The installed modules that no process recorded in `directory` imported."""
    seen: set[str] = set()
    for listing in directory.glob("imported-*.txt"):
        seen.update(listing.read_text("utf-8").split())
    if not seen:
        raise SystemExit(f"no module lists in {directory}: was {ENV} set for the run?")
    return sorted(set(installed_modules()) - seen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, help="lists from an earlier run")
    parser.add_argument(
        "pytest_args", nargs="*", help='pytest arguments (default -n 2 -m "not slow")'
    )
    args = parser.parse_args(argv)
    if args.source is None:
        args.source = Path(tempfile.mkdtemp(prefix="fedanon-imports-"))
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            *(args.pytest_args or ["-n", "2", "-m", "not slow"]),
        ]
        subprocess.run(command, cwd=ROOT, env={**os.environ, ENV: str(args.source)}, check=False)
    missing = never_imported(args.source)
    total = len(installed_modules())
    print(f"{len(missing)} of {total} modules never imported by the run:")
    for name in missing:
        print(f"  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
