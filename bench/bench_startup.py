"""CLI start-up: how long `fedanon --help` and an argument error take, wall and CPU.

    python bench/bench_startup.py [RUNS] [--source DIR]     # default 15 runs per case

Each case runs the CLI RUNS times in a fresh process and prints the median wall time and the
median CPU time (user + system of the child, from `resource.getrusage(RUSAGE_CHILDREN)`). CPU
time is the number to trust on a shared machine; wall time includes waiting for a core.

Without --source it runs the installed console script (the `fedanon` beside this interpreter).
With --source DIR it runs `python -m fedanon.cli.main` in the source tree DIR instead (for
example an exported older commit: `git archive REV | tar -x -C DIR`), to compare before/after
on the same machine in one sitting.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from machine_info import describe

SCRIPT = Path(sys.executable).with_name("fedanon")
CASES = {
    "fedanon --help": ["--help"],
    "fedanon anonymize lkc --help": ["anonymize", "lkc", "--help"],
    "argument error (anonymize lkc --K x)": ["anonymize", "lkc", "--K", "x"],
}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(
    command: list[str], args: list[str], runs: int, env: dict[str, str], cwd: str | None
) -> tuple[float, float]:
    """Median wall and median CPU seconds of `COMMAND ARGS` over `runs` fresh processes."""
    walls, cpus = [], []
    for _ in range(runs):
        cpu0, wall0 = _children_cpu(), time.perf_counter()
        subprocess.run([*command, *args], capture_output=True, check=False, env=env, cwd=cwd)
        walls.append(time.perf_counter() - wall0)
        cpus.append(_children_cpu() - cpu0)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("runs", type=int, nargs="?", default=15, help="runs per case")
    options.add_argument("--source", help="run `python -m fedanon.cli.main` from this tree")
    given = options.parse_args()
    env = dict(os.environ)
    command = [str(SCRIPT)]
    if given.source:
        env["PYTHONPATH"] = str(Path(given.source).resolve())
        command = [sys.executable, "-m", "fedanon.cli.main"]
    print(describe(["rich"]))
    print(
        f"\n{' '.join(command)}{' from ' + given.source if given.source else ''}: "
        f"median of {given.runs} runs\n"
    )
    print("| command | wall | CPU |")
    print("|---|---|---|")
    for name, args in CASES.items():
        wall, cpu = measure(command, args, given.runs, env, given.source)
        print(f"| {name} | {wall * 1000:.0f} ms | {cpu * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
