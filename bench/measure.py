"""Helpers the benchmarks share: best-of-N CPU time, a markdown table, the Adult LKC job of the
distributed benches and the federation's CPU seconds."""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.leader.kinds.lkc import spec_from_table
from fedanon.readers.datadir import data_dir
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.loader import load_taxonomy


def best_cpu_seconds(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best process CPU time of `repeat` calls: the least disturbed by other load on the box."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table, ready for bench/RESULTS.md."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# --- The Adult LKC job and the federation's CPU, shared by the distributed benches
# (bench_parties.py, bench_dropouts.py, bench_distributed.py and the benches importing it).


def adult_arguments(
    parser: argparse.ArgumentParser, rows: int = 4000, L: int = 2, K: int = 10, C: str = "0.5"
) -> None:
    """The options naming the Adult slice and the LKC job (data, taxonomy, rows, L, K, C)."""
    adult = data_dir() / "adult"
    parser.add_argument("--rows", type=int, default=rows, help="first N rows of Adult (0: all)")
    parser.add_argument("--L", type=int, default=L)
    parser.add_argument("--K", type=int, default=K)
    parser.add_argument("--C", default=C)
    parser.add_argument("--data", type=Path, default=adult / "adult_all.csv")
    parser.add_argument("--taxonomy", type=Path, default=adult / "lkc_paper_taxonomy.hchy")


def lkc_job(table: pd.DataFrame, args: argparse.Namespace) -> tuple[TaxonomyFile, LKCJobSpec]:
    """`args.taxonomy` loaded against `table`, and the LKC job (`args.L`, `K`, `C`, the table's
    class values) every distributed bench runs."""
    taxonomy = load_taxonomy(args.taxonomy, data_columns=list(table.columns))
    spec = spec_from_table({"L": args.L, "K": args.K, "C": args.C}, taxonomy, "bench")
    return taxonomy, spec.with_class_values_of(table)


def adult_lkc_job(args: argparse.Namespace) -> tuple[pd.DataFrame, TaxonomyFile, LKCJobSpec]:
    """The table (`args.rows` first rows, all when 0) and its LKC job, the data line printed;
    exits with a one-line message when the data is missing (FEDANON_DATA_DIR)."""
    if not args.data.exists() or not args.taxonomy.exists():
        raise SystemExit(f"data not found: {args.data} / {args.taxonomy} (FEDANON_DATA_DIR)")
    table = pd.read_csv(args.data, dtype=str, keep_default_na=False)
    if args.rows:
        table = table.iloc[: args.rows].reset_index(drop=True)
    taxonomy, spec = lkc_job(table, args)
    print(f"data: {args.data.name}, {len(table):,} records, L={args.L} K={args.K} C={args.C}")
    return table, taxonomy, spec


TICKS = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    """The live children of process `pid` (every thread's, from /proc)."""
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        pass
    return found


def tree_cpu(pid: int) -> float:
    """CPU seconds of a live process, its reaped children (/proc/PID/stat) and, recursively,
    its live children (a daemon's idle key workers and union worker processes); 0 once gone.
    A child reaped between two readings moves into its parent's count: counted once."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    own = sum(int(v) for v in fields[11:15]) / TICKS  # utime stime cutime cstime
    return own + sum(tree_cpu(child) for child in _children(pid))


def own_cpu() -> float:
    """CPU seconds of this process and all its descendants, reaped or live: with the daemons of
    ``fedanon.leader.sim.federation`` (its children, with their worker processes) the whole
    federation's. On a machine with fewer cores than daemons the wall clock measures the
    contention, this sum the work."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    live = sum(tree_cpu(child) for child in _children(os.getpid()))
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime + live
