"""CLI start-up: how long `fedanon --help` and an argument error take, wall and CPU.

    python bench/bench_startup.py [RUNS]     # default 15 runs per case

Each case runs the installed console script (the `fedanon` beside this interpreter) RUNS times
in a fresh process and prints the median wall time and the median CPU time (user + system of
the child, from `resource.getrusage(RUSAGE_CHILDREN)`). CPU time is the number to trust on a
shared machine; wall time includes waiting for a core.
"""

from __future__ import annotations

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


def measure(args: list[str], runs: int) -> tuple[float, float]:
    """Median wall and median CPU seconds of `fedanon ARGS` over `runs` fresh processes."""
    walls, cpus = [], []
    for _ in range(runs):
        cpu0, wall0 = _children_cpu(), time.perf_counter()
        subprocess.run([str(SCRIPT), *args], capture_output=True, check=False)
        walls.append(time.perf_counter() - wall0)
        cpus.append(_children_cpu() - cpu0)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    print(describe(["rich"]))
    print(f"\nMedian of {runs} runs\n")
    print("| command | wall | CPU |")
    print("|---|---|---|")
    for name, args in CASES.items():
        wall, cpu = measure(args, runs)
        print(f"| {name} | {wall * 1000:.0f} ms | {cpu * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
