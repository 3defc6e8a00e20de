"""Extra time of a dropout: an LKC job that reruns without a party killed for good (#28).

One federation of ``--parties`` real daemons on loopback (mutual TLS), every one with
``[policy] allow_exclusion = true``; the job uses the pairwise sum and the shuffle union (what a
rerun needs). Three kinds of session alternate ``--repeat`` times, after one untimed warm-up:

* ``fault-free``: all parties, no failure;
* ``dropout``: the last party is SIGKILLed right after iteration ``--at``'s secure sum; the job
  reruns among the others (then the daemon is restarted, untimed);
* ``survivors``: a fault-free job of the others alone (what the rerun repeats).

Every release is checked (fault-free against the centralized release of the whole table, the
other two against that of the survivors' pooled records). Printed: median wall seconds and
leader CPU seconds of each kind, and the extra time per dropout, dropout / fault-free - 1.

    .venv/bin/python bench/bench_dropout.py --parties 10 --rows 4000 --at 2 --repeat 3
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
from bench_distributed import centralized, machine, rows

from fedanon.leader.kinds.lkc import run_lkc, spec_from_table
from fedanon.leader.sim import federation, split_table
from fedanon.readers.datadir import data_dir
from fedanon.taxonomy.loader import load_taxonomy

KINDS = ("fault-free", "dropout", "survivors")
RERUN = {"sum_mode": "pairwise", "union_mode": "shuffle", "rpc_seconds": 300.0}


def main(argv: list[str] | None = None) -> int:
    adult = data_dir() / "adult"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", type=int, default=10)
    parser.add_argument("--rows", type=int, default=4000, help="first N rows of Adult (0: all)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--at", type=int, default=2, help="kill after this iteration's sum")
    parser.add_argument("--L", type=int, default=2)
    parser.add_argument("--K", type=int, default=10)
    parser.add_argument("--C", default="0.5")
    parser.add_argument("--data", type=Path, default=adult / "adult_all.csv")
    parser.add_argument("--taxonomy", type=Path, default=adult / "lkc_paper_taxonomy.hchy")
    args = parser.parse_args(argv)
    if args.parties < 4 or args.repeat < 1 or args.at < 1:
        print("--parties at least 4 (3 must survive), --repeat and --at at least 1")
        return 2
    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    table = pd.read_csv(args.data, dtype=str, keep_default_na=False)
    if args.rows:
        table = table.iloc[: args.rows].reset_index(drop=True)
    taxonomy = load_taxonomy(args.taxonomy, data_columns=list(table.columns))
    spec = spec_from_table({"L": args.L, "K": args.K, "C": args.C}, taxonomy, "bench")
    spec = spec.with_class_values_of(table)
    print(f"data: {args.data.name}, {len(table):,} records, L={args.L} K={args.K} C={args.C}")

    work = Path(tempfile.mkdtemp(prefix="fedanon-bench-dropout-"))
    parts = split_table(table, args.parties, "random", seed=args.parties)
    survivors = pd.concat(parts[:-1], ignore_index=True)
    expected = {
        "fault-free": rows(centralized(table, taxonomy, spec, work / "all.csv")[1]),
        "survivors": rows(centralized(survivors, taxonomy, spec, work / "s.csv")[1]),
    }
    expected["dropout"] = expected["survivors"]
    wall: dict[str, list[float]] = {k: [] for k in KINDS}
    cpu: dict[str, list[float]] = {k: [] for k in KINDS}
    policy = "allow_exclusion = true"
    with federation(parts, args.taxonomy, rpc_seconds=300.0, policy=policy) as fed:
        victim = fed.daemons[-1]
        for r in range(-1, args.repeat):  # -1: one untimed warm-up of each kind
            for kind in KINDS:
                fed.wait_idle_keys()
                out = work / f"{kind}-{r}.csv"
                job = fed.leader_job(taxonomy, spec, out, **RERUN)
                if kind == "survivors":
                    job.parties = job.parties[:-1]
                fired: list[int] = []

                def kill(step: Any, kind: str = kind, fired: list[int] = fired) -> None:
                    if kind == "dropout" and not fired and step.iteration == args.at:
                        fired.append(step.iteration)
                        fed.stop(victim, signal.SIGKILL)

                began, cpu_began = time.perf_counter(), time.process_time()
                report = run_lkc(job, on_step=kill)
                seconds = time.perf_counter() - began
                cpu_seconds = time.process_time() - cpu_began
                released = rows(pd.read_csv(out, dtype=str, keep_default_na=False))
                if released != expected[kind]:
                    print(f"{kind}: the release differs from the centralized one")
                    return 1
                if kind == "dropout":
                    if report.get("excluded") != [victim.name]:
                        print(f"dropout: {victim.name} was not excluded ({report.get('excluded')})")
                        return 1
                    fed.start(victim)
                    fed.wait_ready(victim)
                if r >= 0:
                    wall[kind].append(seconds)
                    cpu[kind].append(cpu_seconds)
            if r >= 0:
                shown = ", ".join(f"{k} {wall[k][-1]:.2f} s" for k in KINDS)
                print(f"repeat {r + 1}: {shown}", flush=True)

    median = {k: statistics.median(wall[k]) for k in KINDS}
    median_cpu = {k: statistics.median(cpu[k]) for k in KINDS}
    print()
    print(
        f"{args.parties} parties, the last killed after iteration {args.at}; "
        f"median of {args.repeat} sessions each"
    )
    print()
    print("| session | wall s | leader CPU s | wall / fault-free |")
    print("|---|---|---|---|")
    for k in KINDS:
        ratio = median[k] / median["fault-free"]
        print(f"| {k} | {median[k]:.3f} | {median_cpu[k]:.3f} | {ratio:.3f} |")
    extra = median["dropout"] / median["fault-free"] - 1
    print()
    print(f"extra time per dropout: {100 * extra:+.1f} % of the fault-free session")
    return 0


if __name__ == "__main__":
    sys.exit(main())
