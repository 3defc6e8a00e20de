"""A whole `fedanon anonymize lkc` process against a whole pyarrow read + write of the same table.

What a user pays: interpreter start, imports, reading, encoding, the anonymization, the
independent check, the release report (the terminal summary; no ``--report`` or ``--html``
file) and writing. The floor is a Python process that imports pyarrow, reads the CSV and
writes it back (`pyarrow.csv`), nothing else. Both run as fresh processes, alternating, after
one untimed call each (so Python has its bytecode caches, as in any installed copy;
``PYTHONDONTWRITEBYTECODE`` is dropped for the children). CPU is user + system of the child
(`os.wait4`), peak memory its maximum resident set (this process imports neither pandas nor
the table, so a forked child starts small); medians over the rounds. The ratio is the
issue's figure: fedanon's CPU over the floor's, round by round (its median is printed). A
third row, a process that only imports pandas and pyarrow, shows what any pandas-based
command pays before it reads a byte.

    .venv/bin/python bench/bench_whole_process.py --rounds 9            # Adult, L4 K20 C0.2
    .venv/bin/python bench/bench_whole_process.py --rows 1000000 --rounds 3

``--rows N`` runs Adult blown up to N records (``bench_lkc.py make``: each record plus copies
with the numerical QIDs shifted by a few units), written once by a subprocess before timing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fedanon.readers.datadir import data_dir  # no pandas here: children fork a small parent

ADULT = data_dir() / "adult" / "adult_all.csv"
TAXONOMY = data_dir() / "adult" / "lkc_paper_taxonomy.hchy"

FLOOR = "import sys, pyarrow.csv as c; c.write_csv(c.read_csv(sys.argv[1]), sys.argv[2])"


def fedanon_command() -> list[str]:
    """The ``fedanon`` console script of this interpreter's environment (what a user runs)."""
    script = Path(sys.executable).with_name("fedanon")
    return [str(script)] if script.exists() else [sys.executable, "-m", "fedanon.cli.main"]


def timed(
    command: list[str], env: dict[str, str], cwd: Path | None = None
) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one child process; exits on a failed run."""
    began = time.perf_counter()
    child = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode() if child.stderr else ""
    if child.returncode != 0:
        sys.exit(f"{command[0]}: exit {child.returncode}: {stderr.strip()[-400:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, help="Adult blown up to this many rows")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--L", default="4")
    parser.add_argument("--k", default="20")
    parser.add_argument("--C", default="0.2")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="also run `python -m fedanon.cli.main` from this source tree (e.g. main's, from "
        "`git archive`), in the same rounds",
    )
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="bench-whole-") as tmp:
        work = Path(tmp)
        data = ADULT
        if args.rows:
            data = work / "data.csv"
            make = [sys.executable, str(Path(__file__).with_name("bench_lkc.py")), "make"]
            subprocess.run([*make, str(args.rows), str(data)], check=True)
        job = [
            *("anonymize", "lkc", "--data", str(data), "--taxonomy", str(TAXONOMY)),
            *("--L", args.L, "--k", args.k, "--C", args.C),
            *("--out", str(work / "release.csv"), "--quiet"),
        ]
        anonymize = [*fedanon_command(), *job]
        before = [sys.executable, "-m", "fedanon.cli.main", *job]
        # `python -m` puts its working directory first on sys.path: run it inside the tree.
        before_env = {**env, "PYTHONPATH": str(args.baseline.resolve())} if args.baseline else env
        floor = [sys.executable, "-c", FLOOR, str(data), str(work / "copy.csv")]
        imports = [sys.executable, "-c", "import pandas, pyarrow.csv"]
        timed(anonymize, env), timed(floor, env)  # bytecode caches, page cache
        runs: dict[str, list[tuple[float, float, float]]] = {
            "fedanon": [],
            "pyarrow": [],
            "import pandas (no work)": [],
        }
        if args.baseline:
            runs[f"fedanon from {args.baseline}"] = []
            timed(before, before_env, args.baseline)
        for _ in range(args.rounds):
            runs["pyarrow"].append(timed(floor, env))
            runs["fedanon"].append(timed(anonymize, env))
            runs["import pandas (no work)"].append(timed(imports, env))
            if args.baseline:
                runs[f"fedanon from {args.baseline}"].append(
                    timed(before, before_env, args.baseline)
                )
    rows = args.rows or sum(1 for _ in ADULT.open()) - 1
    print(f"{rows:,} rows, L={args.L} K={args.k} C={args.C}; medians of {args.rounds} rounds")
    print("| process | wall s | CPU s | peak RSS MB |")
    print("|---|---|---|---|")
    for name, samples in runs.items():
        wall, cpu, peak = (statistics.median(s[i] for s in samples) for i in range(3))
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | {peak:.0f} |")
    for name, samples in runs.items():
        if name.startswith("fedanon"):
            ratios = [f[1] / p[1] for f, p in zip(samples, runs["pyarrow"], strict=True)]
            print(
                f"CPU ratio {name} / pyarrow: median {statistics.median(ratios):.2f}x "
                f"(rounds {min(ratios):.2f}-{max(ratios):.2f}x)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
