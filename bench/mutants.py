"""Run the hand-made mutants of bench/mutants/*.toml and report which ones the tests kill.

A mutant is one exact text replacement in one file of the repository, with the tests that must
fail once it is applied. Each run copies the repository (the files git knows about, tracked or
new but not ignored; never .venv or caches) to a temporary directory, applies one mutant at a
time there (restoring the file afterwards), and runs the mutant's tests with PYTHONPATH set to
the copy, so that daemons the tests start in subprocesses import the mutated code too. The
working tree is never modified.

Before the mutants, each distinct test list runs once on the unmutated copy: a test that fails
without a mutant cannot show that it kills one (reported as an error).

    python bench/mutants.py              # every mutant of every area
    python bench/mutants.py --area core  # bench/mutants/core.toml only
    python bench/mutants.py --only ID    # one mutant (repeatable)
    python bench/mutants.py --list       # ids, files and reasons, without running anything

Prints a table id | file | result | first failing test | seconds; exit status 0 when every
mutant is killed, 1 when one survives or cannot be run, 2 for an invalid mutant definition
(refused before any run: a file or test path that does not exist, a find text not
occurring exactly once).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script: make `tools` importable

from fedanon.readers.datadir import data_dir  # noqa: E402
from tools.layout import namespaced_folders  # noqa: E402

MUTANT_DIR = REPO / "bench" / "mutants"
ID_FORM = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
PYTEST_ARGS = ["-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0"]


class DefinitionError(Exception):
    """A mutant file or entry that cannot be applied as written."""


@dataclass(frozen=True)
class Mutant:
    """One replacement: `find` (occurring exactly once in `file`) becomes `replace`."""

    id: str
    area: str
    file: str
    find: str
    replace: str
    tests: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class PytestRun:
    """One pytest run: its exit code (None: timed out), the first failing test, its duration."""

    code: int | None
    failed: str
    seconds: float


def load_mutants(directory: Path) -> list[Mutant]:
    """Every mutant of every ``<area>.toml`` in `directory`, checked against the repository."""
    mutants: list[Mutant] = []
    for path in sorted(directory.glob("*.toml")):
        try:
            entries = tomllib.loads(path.read_text(encoding="utf-8")).get("mutant", [])
        except tomllib.TOMLDecodeError as exc:
            raise DefinitionError(f"{path.name}: {exc}") from None
        for entry in entries:
            mutants.append(_mutant(entry, path.stem, path.name))
    seen: set[str] = set()
    for mutant in mutants:
        if mutant.id in seen:
            raise DefinitionError(f"mutant id '{mutant.id}' is defined twice")
        seen.add(mutant.id)
    return mutants


def _mutant(entry: dict, area: str, source: str) -> Mutant:
    """Validate one [[mutant]] table: fields, id form, and a `find` that occurs exactly once."""
    expected = {"id", "file", "find", "replace", "tests", "why"}
    if set(entry) != expected:
        raise DefinitionError(
            f"{source}: mutant {entry.get('id', '?')!r} needs exactly the keys "
            f"{', '.join(sorted(expected))}"
        )
    if not isinstance(entry["id"], str) or not ID_FORM.match(entry["id"]):
        raise DefinitionError(f"{source}: id {entry['id']!r} is not kebab-case")
    tests = entry["tests"]
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
        raise DefinitionError(f"{source}: mutant '{entry['id']}' needs a non-empty tests list")
    target = REPO / entry["file"]
    if not target.is_file():
        raise DefinitionError(f"{source}: mutant '{entry['id']}': no file {entry['file']}")
    occurrences = target.read_text(encoding="utf-8").count(entry["find"])
    if occurrences != 1:
        raise DefinitionError(
            f"{source}: mutant '{entry['id']}': its find text occurs {occurrences} times in "
            f"{entry['file']} (must be exactly once)"
        )
    if entry["find"] == entry["replace"]:
        raise DefinitionError(f"{source}: mutant '{entry['id']}' replaces a text by itself")
    for test in tests:
        missing = _missing_test(test)
        if missing:
            raise DefinitionError(f"{source}: mutant '{entry['id']}': {missing}")
    return Mutant(
        entry["id"],
        area,
        entry["file"],
        entry["find"],
        entry["replace"],
        tuple(tests),
        entry["why"],
    )


def _missing_test(test: str) -> str:
    """Why the pytest id `test` names nothing (its file is gone, or the file defines no test
    function of that name), or "" when it does: a moved test would otherwise only show up as a
    failing baseline run, after minutes of other mutants."""
    path, _, node = test.partition("::")
    if not (REPO / path).exists():
        return f"no test path {path}"
    if node and (REPO / path).is_file():
        name = node.split("::")[-1].split("[")[0]
        defined = rf"^\s*(async\s+)?def {re.escape(name)}\("
        if not re.search(defined, (REPO / path).read_text(encoding="utf-8"), re.MULTILINE):
            return f"{path} defines no test {name}"
    return ""


def copy_repository(destination: Path) -> None:
    """Copy the files git knows (tracked, or new and not ignored) into `destination`."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():  # deleted but not yet staged files are listed too
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    # Laid out as installed: `fedanon.party` must resolve to the copy's party/ (through the
    # copy's fedanon/ on PYTHONPATH), not to the editable install's mapping onto the real tree.
    for folder in namespaced_folders():
        (destination / "fedanon" / folder).symlink_to(Path("..") / folder, target_is_directory=True)


def run_tests(copy: Path, tests: tuple[str, ...], timeout: float) -> PytestRun:
    """Run pytest on `tests` inside `copy`: exit code (None on timeout), first failing test."""
    # The copy lives in a temporary folder, where the default data directory (beside the
    # repository) does not exist: without this, data-backed tests would skip and their
    # mutants would "survive".
    env = {
        **os.environ,
        "PYTHONPATH": str(copy),
        "PYTHONDONTWRITEBYTECODE": "1",
        "FEDANON_DATA_DIR": str(data_dir()),
    }
    began = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *PYTEST_ARGS, *tests],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return PytestRun(None, "", time.perf_counter() - began)
    failed = re.search(r"^FAILED (\S+)", done.stdout, re.MULTILINE)
    return PytestRun(done.returncode, failed[1] if failed else "", time.perf_counter() - began)


def verdict(code: int | None) -> str:
    """pytest's exit code as a mutation result: 1 (a test failed) or a timeout kill it."""
    if code is None:
        return "killed (timeout)"
    return {0: "SURVIVED", 1: "killed"}.get(code, f"error (pytest exit {code})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="ID",
        help="run this mutant only (repeatable)",
    )
    parser.add_argument("--area", help="run the mutants of bench/mutants/AREA.toml only")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="seconds per test run; a mutant whose tests hang is killed",
    )
    args = parser.parse_args(argv)
    try:
        mutants = load_mutants(MUTANT_DIR)
    except DefinitionError as exc:
        print(f"mutants: error: {exc}", file=sys.stderr)
        return 2
    unknown = sorted(set(args.only) - {m.id for m in mutants})
    if unknown:
        print(f"mutants: error: no mutant with id {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.area and args.area not in {m.area for m in mutants}:
        print(f"mutants: error: no area '{args.area}' in {MUTANT_DIR}", file=sys.stderr)
        return 2
    chosen = [
        m
        for m in mutants
        if (not args.only or m.id in args.only) and (not args.area or m.area == args.area)
    ]
    if args.list:
        for m in chosen:
            print(f"{m.id} | {m.file} | {m.why}")
        return 0

    rows: list[tuple[str, str, str, str, float]] = []
    with tempfile.TemporaryDirectory(prefix="fedanon-mutants-") as tmp:
        copy = Path(tmp)
        copy_repository(copy)
        baseline: dict[tuple[str, ...], PytestRun] = {}
        for m in chosen:
            if m.tests not in baseline:
                baseline[m.tests] = run_tests(copy, m.tests, args.timeout)
            unmutated = baseline[m.tests]
            if unmutated.code != 0:  # the failing test named: a flaky one is told from a stale one
                failed = unmutated.failed or f"pytest exit {unmutated.code}"
                rows.append((m.id, m.file, "error (tests fail without the mutant)", failed, 0.0))
                continue
            target = copy / m.file
            original = target.read_text(encoding="utf-8")
            target.write_text(original.replace(m.find, m.replace, 1), encoding="utf-8")
            try:
                run = run_tests(copy, m.tests, args.timeout)
            finally:
                target.write_text(original, encoding="utf-8")
            rows.append((m.id, m.file, verdict(run.code), run.failed, run.seconds))
            print(f"{m.id}: {rows[-1][2]} ({run.seconds:.1f} s)", file=sys.stderr, flush=True)

    print("| id | file | result | first failing test | seconds |")
    print("|---|---|---|---|---|")
    for mutant_id, file, result, failed, seconds in rows:
        print(f"| {mutant_id} | {file} | {result} | {failed} | {seconds:.1f} |")
    return 0 if all(r[2].startswith("killed") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
