"""Helpers the benchmarks share: best-of-N CPU time, a markdown table, the Adult LKC job of the
distributed benches, the federation's CPU seconds, the check of a release against a reference
and the growth table over federation sizes."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
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


def federation_cpu(pids: Sequence[int]) -> float:
    """CPU seconds of this process and of the processes `pids` with their descendants, so far:
    one federation's, where this process runs several side by side (`own_cpu` counts them all)."""
    return sum(os.times()[:2]) + sum(tree_cpu(pid) for pid in pids)


# --- A release checked against a reference before any number is printed.


def release_digest(table: pd.DataFrame) -> np.ndarray:
    """A release's rows (as text) as a multiset, small enough to keep at a million rows: the
    sorted 64-bit hashes of its rows (the rows as Python tuples took about a gigabyte)."""
    return np.sort(pd.util.hash_pandas_object(table.astype(str), index=False).to_numpy())


@dataclass(frozen=True)
class Reference:
    """The release every run must reproduce: its rows (`release_digest`) and its final cut."""

    name: str  # "the centralized one", "the first one"
    digest: np.ndarray
    final_cut: object

    @classmethod
    def of(cls, name: str, table: pd.DataFrame, report: dict[str, Any]) -> Reference:
        return cls(name, release_digest(table), report["final_cut"])


def check_release(out: Path, report: dict[str, Any], reference: Reference, what: str) -> None:
    """Exit (one line naming `what`, code 1) unless the release written to `out` and its
    `report` equal `reference`: rows as a multiset, final cut."""
    released = release_digest(pd.read_csv(out, dtype=str, keep_default_na=False))
    if not np.array_equal(released, reference.digest) or report["final_cut"] != reference.final_cut:
        raise SystemExit(f"{what}: the release differs from {reference.name}")


def growth_table(
    modes: Sequence[str],
    sizes: Sequence[int],
    values: dict[tuple[int, str], dict[str, float]],
    columns: Sequence[str],
    extra: tuple[str, Callable[[int, str], float], bool],
    unit: str,
    total: str,
) -> list[str]:
    """The markdown rows of a growth table: per mode, one row per federation size (`values`
    of `columns`, then the `extra` column: its header, its value, whether it gets a slope too),
    the least-squares slope per party (in `unit` per party), and the largest size's total over
    the smallest's (named `total`)."""
    header, extra_value, extra_slope = extra
    lines = ["| union | parties | " + " | ".join(columns) + f" | {header} |"]
    lines.append("|---|---|" + "---|" * (len(columns) + 1))
    for mode in modes:
        for n in sizes:
            cells = " | ".join(f"{values[n, mode][c]:.3f}" for c in columns)
            lines.append(f"| {mode} | {n} | {cells} | {extra_value(n, mode):.3f} |")
        fits = " | ".join(slope(sizes, [values[n, mode][c] for n in sizes]) for c in columns)
        last = slope(sizes, [extra_value(n, mode) for n in sizes]) if extra_slope else ""
        lines.append(f"| {mode} | **slope {unit}/party** | {fits} | {last} |")
        first, final = values[sizes[0], mode]["total"], values[sizes[-1], mode]["total"]
        lines.append(
            f"| {mode} | {sizes[-1]} / {sizes[0]} parties | {total} x{final / first:.2f} "
            f"(linear would be x{sizes[-1] / sizes[0]:.2f}) |" + " |" * len(columns)
        )
    return lines


def slope(sizes: Sequence[int], seconds: Sequence[float]) -> str:
    """Seconds per party of the least-squares line through (parties, seconds)."""
    if len(sizes) < 2:
        return "-"
    return f"{statistics.linear_regression(sizes, seconds).slope:.3f}"
