"""Distributed LKC at a million rows over 3 parties, in each union mode (issue 17, scale).

Adult blown up to `--rows` records as `bench_lkc.py scale` does (every record plus copies with
small shifts of the numerical QIDs), split at random over 3 real party daemons (mutual TLS,
loopback), L=4 K=20 C=1 (the LKC paper's Fig. 9 setting). One centralized run gives the
reference release and the ratio; then one session per union mode. Every distributed release is
compared with the centralized one before a number is printed. Reported per mode: seconds per
phase (the leader's report), bytes on the wire (the leader's own union traffic, and every
message of the session counted once by its sender) and CPU seconds of every process of the run.
Each session starts from idle daemons whose pools of leader-layer keys are full (`--idle-keys 0`:
daemons without them). Last, the union's critical path: the leader's phases one after the other
(its report's ``union_seconds``) and, for the layered union, each hop's own seconds from its
daemon's log (sealing, its STRIP input arriving, its work after the last chunk, forwarding).

    .venv/bin/python bench/bench_union_1m.py                      # 1M rows, both modes
    .venv/bin/python bench/bench_union_1m.py --rows 200000 --modes shuffle
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from bench_distributed import fmt_bytes, rows, wire
from bench_lkc import blow_up
from bench_union_modes import helpers_cpu, hop_seconds, log_marks, print_critical_path, tree_cpu
from machine_info import describe

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema
from fedanon.leader.kinds.lkc import run_lkc, spec_from_table
from fedanon.leader.sim import federation, split_table
from fedanon.readers.datadir import data_dir
from fedanon.readers.table_io import write_table
from fedanon.taxonomy.loader import load_taxonomy

PHASES = ("handshake", "specialize", "union", "check", "write", "total")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    adult = data_dir() / "adult"
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, help="a blown-up table made before (else made now)")
    parser.add_argument("--taxonomy", type=Path, default=adult / "lkc_paper_taxonomy.hchy")
    parser.add_argument("--modes", default="shuffle,layered", help="union modes, comma-separated")
    parser.add_argument("--L", type=int, default=4)
    parser.add_argument("--K", type=int, default=20)
    parser.add_argument("--C", default="1")
    parser.add_argument(
        "--idle-keys",
        type=int,
        default=None,
        help="the daemons' [union] idle_keys (default: one per record; 0: none); every session "
        "starts once the daemons' pools are full",
    )
    args = parser.parse_args(argv)
    print(f"machine: {describe(('grpcio', 'cryptography', 'numpy', 'pandas'))}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    work = Path(tempfile.mkdtemp(prefix="fedanon-union-1m-"))
    data = args.data
    if data is None:
        data = work / f"adult_{args.rows}.csv"
        blow_up(args.rows, data)
    table = pd.read_csv(data, dtype=str, keep_default_na=False)
    taxonomy = load_taxonomy(args.taxonomy, data_columns=list(table.columns))
    spec = spec_from_table({"L": args.L, "K": args.K, "C": args.C}, taxonomy, "bench")
    spec = spec.with_class_values_of(table)
    print(f"data: {data.name}, {len(table)} records, L={args.L} K={args.K} C={args.C}, 3 parties")

    began, cpu_began = time.perf_counter(), time.process_time()
    schema = build_schema(taxonomy, table, spec.qids, spec.sensitive, spec.class_column)
    release = anonymize_lkc(table, schema, spec.params, spec.score, spec.drop)
    write_table(release.table, work / "central.csv")
    central, central_cpu = time.perf_counter() - began, time.process_time() - cpu_began
    reference = rows(release.table)
    print(f"centralized: {central:.2f} s wall, {central_cpu:.2f} s CPU", flush=True)

    parts = split_table(table, 3, "random", seed=3)
    results = {}
    union: dict[str, list[dict[str, float]]] = {}
    hops: dict[str, list[dict[str, dict[int, float]]]] = {}
    with federation(parts, args.taxonomy, rpc_seconds=600.0, idle_keys=args.idle_keys) as fed:
        for mode in args.modes.split(","):
            if args.idle_keys != 0 and not fed.wait_idle_keys(timeout=900):
                print("the daemons' idle key pools did not fill within 900 s", file=sys.stderr)
                return 1
            daemons = [d.process.pid for d in fed.daemons if d.process is not None]
            marks = log_marks(fed)
            daemon_cpu = sum(tree_cpu(pid) for pid in daemons) + helpers_cpu(daemons)
            cpu_began = time.process_time()
            out = work / f"{mode}.csv"
            job = fed.leader_job(
                taxonomy,
                spec,
                out,
                rpc_seconds=600.0,
                union_seconds=3600.0,
                union_mode=mode,
            )
            report = run_lkc(job)
            cpu = (
                time.process_time()
                - cpu_began
                + sum(map(tree_cpu, daemons))
                + helpers_cpu(daemons)
                - daemon_cpu
            )
            if rows(pd.read_csv(out, dtype=str, keep_default_na=False)) != reference:
                print(f"{mode}: the release differs from the centralized one", file=sys.stderr)
                return 1
            results[mode] = (report, cpu)
            union[mode] = [report["union_seconds"]]
            hops[mode] = [hop_seconds(fed, marks)]
            print(f"{mode}: {report['seconds']['total']:.1f} s", flush=True)

    print()
    print("Seconds per phase (one session each; ratio of the total to the centralized run)")
    print()
    print("| run | " + " | ".join(PHASES) + " | CPU (all processes) | wall ratio | CPU ratio |")
    print("|---|" + "---|" * (len(PHASES) + 3))
    print(
        "| centralized | " + " | ".join("-" for _ in PHASES[:-1]) + f" | {central:.2f} | "
        f"{central_cpu:.2f} | 1.0x | 1.0x |"
    )
    for mode, (report, cpu) in results.items():
        s = report["seconds"]
        print(
            f"| {mode} | "
            + " | ".join(f"{s.get(p, 0.0):.2f}" for p in PHASES)
            + f" | {cpu:.2f} | {s['total'] / central:.1f}x | {cpu / central_cpu:.1f}x |"
        )
    print()
    print("Bytes on the wire")
    print()
    print("| run | iterations | leader union sent | leader union received | union wire (est.) |")
    print("|---|---|---|---|---|")
    for mode, (report, _) in results.items():
        w, leader = wire(report), report["leader_bytes"]
        print(
            f"| {mode} | {w['iterations']} | {fmt_bytes(leader['sent'].get('union', 0))} | "
            f"{fmt_bytes(leader['received'].get('union', 0))} | {fmt_bytes(w['union_wire'])} |"
        )
    print_critical_path(union, hops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
