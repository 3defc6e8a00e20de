"""Distributed / centralized whole run on Adult, 3 parties, in each union mode (issue 17).

One federation of real daemons (mutual TLS, loopback) serves every distributed session; the runs
alternate centralized, layered, shuffle, centralized, ... so that the machine's load drifts over
all three alike. Each run is the whole job in this process: centralized = build the schema,
anonymize, write the CSV; distributed = handshake, specialization loop, secure union, the
leader's LKC check and the CSV (daemon start-up excluded: the daemons serve many sessions).
Every distributed release is compared with the centralized one before a number is printed.
Wall seconds, and CPU seconds of every process of the run (this one, plus the daemons and their
worker processes, from /proc): on a shared machine the wall ratio carries the other tenants'
load, the CPU ratio does not.

    .venv/bin/python bench/bench_union_modes.py --repeat 3
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pandas as pd
from machine_info import describe

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema
from fedanon.leader.config import spec_from_table
from fedanon.leader.run import run_job
from fedanon.leader.sim import federation, split_table
from fedanon.readers.datadir import data_dir
from fedanon.readers.table_io import write_table
from fedanon.taxonomy.loader import load_taxonomy

MODES = ("centralized", "layered", "shuffle")


def rows(table: pd.DataFrame) -> Counter[tuple[str, ...]]:
    return Counter(map(tuple, table.astype(str).itertuples(index=False, name=None)))


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process, its reaped children and its live descendants (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = [
            int(c)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for c in (task / "children").read_text().split()
        ]
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    ticks = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK") + sum(tree_cpu(child) for child in children)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    adult = data_dir() / "adult"
    parser.add_argument("--data", type=Path, default=adult / "adult_all.csv")
    parser.add_argument("--taxonomy", type=Path, default=adult / "lkc_paper_taxonomy.hchy")
    parser.add_argument("--parties", type=int, default=3)
    parser.add_argument("--L", type=int, default=4)
    parser.add_argument("--K", type=int, default=20)
    parser.add_argument("--C", default="0.2")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the three runs")
    args = parser.parse_args(argv)
    if not args.data.exists() or not args.taxonomy.exists():
        print(f"data not found: {args.data} / {args.taxonomy}", file=sys.stderr)
        return 2
    print(f"machine: {describe(('grpcio', 'cryptography', 'numpy', 'pandas'))}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    table = pd.read_csv(args.data, dtype=str, keep_default_na=False)
    taxonomy = load_taxonomy(args.taxonomy, data_columns=list(table.columns))
    spec = spec_from_table({"L": args.L, "K": args.K, "C": args.C}, taxonomy, "bench")
    if spec.class_column and not spec.class_values:
        values = sorted(table[spec.class_column].astype(str).unique())
        spec = dataclasses.replace(spec, class_values=values)
    print(
        f"data: {args.data.name}, {len(table)} records, {len(spec.qids)} QIDs, "
        f"L={args.L} K={args.K} C={args.C}, {args.parties} parties"
    )
    work = Path(tempfile.mkdtemp(prefix="fedanon-union-modes-"))
    parts = split_table(table, args.parties, "random", seed=args.parties)
    wall: dict[str, list[float]] = {m: [] for m in MODES}
    cpu: dict[str, list[float]] = {m: [] for m in MODES}
    phases: dict[str, list[dict[str, float]]] = {m: [] for m in MODES[1:]}
    reference: Counter[tuple[str, ...]] | None = None
    with federation(parts, args.taxonomy) as fed:
        for r in range(args.repeat):
            for mode in MODES:
                out = work / f"{mode}-{r}.csv"
                daemons = [d.process.pid for d in fed.daemons if d.process is not None]
                daemon_cpu = sum(tree_cpu(pid) for pid in daemons)
                began, cpu_began = time.perf_counter(), time.process_time()
                if mode == "centralized":
                    schema = build_schema(
                        taxonomy, table, spec.qids, spec.sensitive, spec.class_column
                    )
                    release = anonymize_lkc(table, schema, spec.params, spec.score, spec.drop)
                    write_table(release.table, out)
                else:
                    job = fed.leader_job(
                        taxonomy,
                        spec,
                        out,
                        union_mode=mode,
                    )
                    report = run_job(job)
                    phases[mode].append(report["seconds"])
                wall[mode].append(time.perf_counter() - began)
                cpu[mode].append(
                    time.process_time()
                    - cpu_began
                    + sum(tree_cpu(pid) for pid in daemons)
                    - daemon_cpu
                )
                released = rows(pd.read_csv(out, dtype=str, keep_default_na=False))
                reference = reference or released
                if released != reference:
                    print(f"{mode}: the release differs from the centralized one", file=sys.stderr)
                    return 1
                print(f"round {r + 1} {mode}: {wall[mode][-1]:.3f} s", flush=True)
    central = statistics.median(wall["centralized"])
    central_cpu = statistics.median(cpu["centralized"])
    print()
    print(f"Median of {args.repeat} alternating rounds (seconds; ratio to centralized)")
    print()
    parts_of_run = ("handshake", "specialize", "union", "check", "write")
    print(
        "| run | wall | "
        + " | ".join(parts_of_run)
        + " | CPU (all processes) | wall ratio | CPU ratio |"
    )
    print("|---|---|" + "---|" * len(parts_of_run) + "---|---|---|")
    for mode in MODES:
        w, c = statistics.median(wall[mode]), statistics.median(cpu[mode])
        split = [
            f"{statistics.median(p[k] for p in phases[mode]):.3f}" if mode in phases else "-"
            for k in parts_of_run
        ]
        print(
            f"| {mode} | {w:.3f} | " + " | ".join(split) + f" | {c:.3f} | "
            f"{w / central:.1f}x | {c / central_cpu:.1f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
