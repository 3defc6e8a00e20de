"""Benchmark of distributed LKC against the centralized engine on Adult (paper setting).

For each federation size (default 3, 5 and 10 parties) the table is split at random, real party
daemons are started on loopback with mutual TLS (``fedanon.leader.sim.federation``), and one
session runs through the leader (``fedanon.leader.kinds.lkc.run_lkc``). Every distributed release
is compared with the centralized one (multiset of rows and final cut) before any number is
printed, so a fast but wrong run cannot produce a result.

Phases compared (wall time; daemon start-up is reported but excluded from the totals):

* setup - centralized: encoding the table; distributed: handshake (each party encodes its
  part, fingerprints, key sharing);
* loop - the specialization loop (centralized: ``anonymize``; distributed: one ring secure sum
  per iteration);
* integrate - centralized: generalizing the records; distributed: the secure set union;
* total - end to end including writing the CSV; the distributed total also contains the
  leader's brute-force privacy check of the release (``check``), which the centralized path
  does not run.

Union workers: ``--union-workers 1,0`` runs every size once per setting, each with its own
daemons, the daemons (sealing) and the leader (opening) configured alike: 1 is in-process, 0 is
one worker process per CPU (``fedanon.crypto.parallel``). The union table then compares the
settings.

Bytes: the leader's report counts what it sent and received per phase; each party reports its
whole-session totals. "All wire" = leader sent + sum of parties' sent (each message counted once,
by its sender). A ring sum's request and reply each cross n links (leader -> P1 -> ... -> Pn and
back), all carrying a vector of the same length, so ring traffic per iteration is estimated as
the leader's per-iteration sum bytes times n, and the union's share as all wire minus that.

    .venv/bin/python bench/bench_distributed.py                  # 3, 5, 10 parties
    .venv/bin/python bench/bench_distributed.py --parties 3 --repeat 2
    .venv/bin/python bench/bench_distributed.py --parties 3 --union-workers 1,0
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
from machine_info import describe
from measure import Reference, check_release, lkc_job

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema
from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.crypto.parallel import Parallelism
from fedanon.leader.kinds.lkc import run_lkc
from fedanon.leader.sim import federation, split_table
from fedanon.readers.datadir import data_dir
from fedanon.readers.table_io import write_table
from fedanon.taxonomy.files import TaxonomyFile

PHASES = ("setup", "loop", "integrate", "total")


def machine() -> str:
    """CPU, cores, load and the versions that matter for this benchmark."""
    return describe(("grpcio", "cryptography", "numpy", "pandas"))


def rows(table: pd.DataFrame) -> Counter[tuple[str, ...]]:
    return Counter(map(tuple, table.astype(str).itertuples(index=False, name=None)))


def centralized(
    table: pd.DataFrame,
    taxonomy: TaxonomyFile,
    spec: LKCJobSpec,
    out: Path,
) -> tuple[dict[str, float], pd.DataFrame, dict[str, Any]]:
    """One centralized run, timed by phase (the same phases as the distributed report)."""
    began = time.perf_counter()
    schema = build_schema(taxonomy, table, spec.qids, spec.sensitive, spec.class_column)
    release = anonymize_lkc(table, schema, spec.params, spec.score, spec.drop)
    write_table(release.table, out)
    total = time.perf_counter() - began
    s = release.report["seconds"]
    phases = {
        "setup": s["encode"],
        "loop": s["anonymize"],
        "integrate": s["generalize"],
        "total": total,
    }
    return phases, release.table, release.report


def distributed_phases(report: dict[str, Any]) -> dict[str, float]:
    s = report["seconds"]
    return {
        "setup": s["handshake"],
        "loop": s["specialize"],
        "integrate": s["union"],
        "total": s["total"],
        "check": s.get("check", 0.0),
    }


def wire(report: dict[str, Any]) -> dict[str, float]:
    """Byte counts from one report (see the module docstring for what each one means)."""
    n = len(report["parties"])
    iterations = report["iterations"]
    leader = report["leader_bytes"]
    sum_leader = leader["sent"].get("sum", 0) + leader["received"].get("sum", 0)
    union_leader = leader["sent"].get("union", 0) + leader["received"].get("union", 0)
    parties_sent = sum(p["sent"] for p in report["party_bytes"].values())
    all_wire = sum(leader["sent"].values()) + parties_sent
    ring_sum = n * sum_leader
    return {
        "iterations": iterations,
        "leader_sum_per_iter": sum_leader / iterations,
        "ring_sum_per_iter": ring_sum / iterations,
        "leader_union": union_leader,
        "union_wire": all_wire - ring_sum,
        "all_wire": all_wire,
    }


def label(n: int, workers: int, settings: int) -> str:
    """A result row's name: the federation size, and the union workers if they vary."""
    return f"{n}" if settings == 1 else f"{n} ({workers} union workers)"


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    adult = data_dir() / "adult"
    parser.add_argument("--data", type=Path, default=adult / "adult_all.csv")
    parser.add_argument("--taxonomy", type=Path, default=adult / "lkc_paper_taxonomy.hchy")
    parser.add_argument("--parties", default="3,5,10", help="federation sizes, comma-separated")
    parser.add_argument("--L", type=int, default=4)
    parser.add_argument("--K", type=int, default=20)
    parser.add_argument("--C", default="0.2")
    parser.add_argument("--sum-mode", choices=("ring", "pairwise"), default="ring")
    parser.add_argument(
        "--repeat", type=int, default=1, help="distributed sessions per size (median reported)"
    )
    parser.add_argument(
        "--rpc-seconds",
        type=float,
        default=60.0,
        help="per-call deadline of parties and leader (the sim's default)",
    )
    parser.add_argument(
        "--union-workers",
        default="0",
        help="union worker processes of daemons and leader, comma-separated "
        "(1 = in-process, 0 = one per CPU); each setting starts its own "
        "daemons",
    )
    args = parser.parse_args(argv)
    if not args.data.exists() or not args.taxonomy.exists():
        print(f"data not found: {args.data} / {args.taxonomy}", file=sys.stderr)
        return 2
    sizes = [int(p) for p in args.parties.split(",")]
    unions = [Parallelism.configured(int(w)) for w in args.union_workers.split(",")]

    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    table = pd.read_csv(args.data, dtype=str, keep_default_na=False)
    taxonomy, spec = lkc_job(table, args)
    print(
        f"data: {args.data.name}, {len(table)} records, {len(spec.qids)} QIDs, "
        f"L={args.L} K={args.K} C={args.C}, score {spec.score}, sum mode {args.sum_mode}"
    )

    work = Path(tempfile.mkdtemp(prefix="fedanon-bench-"))
    runs = [centralized(table, taxonomy, spec, work / "central.csv") for _ in range(3)]
    central = {p: min(r[0][p] for r in runs) for p in PHASES}
    reference = Reference.of("the centralized one", runs[0][1], runs[0][2])
    print("centralized (best of 3): " + ", ".join(f"{p} {central[p]:.3f} s" for p in PHASES))

    results: dict[tuple[int, int], dict[str, Any]] = {}
    for n in sizes:
        parts = split_table(table, n, "random", seed=n)
        for union in unions:
            began = time.perf_counter()
            with federation(parts, args.taxonomy, rpc_seconds=args.rpc_seconds, union=union) as fed:
                start = time.perf_counter() - began
                reports = []
                for r in range(args.repeat):
                    out = work / f"release-{n}-{union.workers}-{r}.csv"
                    job = fed.leader_job(
                        taxonomy,
                        spec,
                        out,
                        sum_mode=args.sum_mode,
                        rpc_seconds=args.rpc_seconds,
                        union_parallelism=union,
                    )
                    report = run_lkc(job)
                    check_release(out, report, reference, f"{n} parties")
                    reports.append(report)
            phases = [distributed_phases(r) for r in reports]
            key = (n, union.workers)
            results[key] = {
                "start": start,
                "phases": {p: statistics.median(x[p] for x in phases) for p in (*PHASES, "check")},
                "wire": wire(reports[0]),
            }
            summary = ", ".join(f"{p} {results[key]['phases'][p]:.2f} s" for p in PHASES)
            print(
                f"{label(*key, len(unions))} parties: daemons up in {start:.1f} s; {summary}",
                flush=True,
            )

    print()
    print("Wall time (seconds) and ratio distributed / centralized")
    print()
    print(
        "| parties | setup | loop | integrate (union) | check | total | "
        "loop ratio | union ratio | total ratio | daemon start |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(
        f"| centralized | {central['setup']:.3f} | {central['loop']:.3f} | "
        f"{central['integrate']:.3f} | - | {central['total']:.3f} | 1 | 1 | 1 | - |"
    )
    for (n, w), res in results.items():
        ph = res["phases"]
        print(
            f"| {label(n, w, len(unions))} | {ph['setup']:.3f} | {ph['loop']:.3f} | "
            f"{ph['integrate']:.3f} | {ph['check']:.3f} | {ph['total']:.3f} | "
            f"{ph['loop'] / central['loop']:.1f}x | "
            f"{ph['integrate'] / central['integrate']:.0f}x | "
            f"{ph['total'] / central['total']:.1f}x | {res['start']:.1f} |"
        )
    print()
    print("Bytes on the wire")
    print()
    print(
        "| parties | iterations | leader sum bytes / iter | ring sum bytes / iter (est.) | "
        "leader union bytes | union wire (est.) | all wire (session) |"
    )
    print("|---|---|---|---|---|---|---|")
    for (n, workers), res in results.items():
        w = res["wire"]
        print(
            f"| {label(n, workers, len(unions))} | {w['iterations']} | "
            f"{fmt_bytes(w['leader_sum_per_iter'])} | "
            f"{fmt_bytes(w['ring_sum_per_iter'])} | {fmt_bytes(w['leader_union'])} | "
            f"{fmt_bytes(w['union_wire'])} | {fmt_bytes(w['all_wire'])} |"
        )
    if len(unions) > 1:
        first = unions[0].workers
        print()
        print(f"Union wall time by union workers (ratio: {first} workers / the others)")
        print()
        print(
            "| parties | "
            + " | ".join(f"{u.workers} workers" for u in unions)
            + " | "
            + " | ".join(f"{first} / {u.workers}" for u in unions[1:])
            + " |"
        )
        print("|---|" + "---|" * (2 * len(unions) - 1))
        for n in sizes:
            union_s = [results[n, u.workers]["phases"]["integrate"] for u in unions]
            print(
                f"| {n} | "
                + " | ".join(f"{t:.2f} s" for t in union_s)
                + " | "
                + " | ".join(f"{union_s[0] / t:.2f}x" for t in union_s[1:])
                + " |"
            )
    if len(sizes) > 1:
        base = min(sizes)
        print()
        print(f"Growth with the number of parties (relative to {base} parties)")
        print()
        print("| parties | loop | union | total | all wire |")
        print("|---|---|---|---|---|")
        for (n, workers), res in results.items():
            b = results[base, workers]
            print(
                f"| {label(n, workers, len(unions))} | "
                f"{res['phases']['loop'] / b['phases']['loop']:.2f}x | "
                f"{res['phases']['integrate'] / b['phases']['integrate']:.2f}x | "
                f"{res['phases']['total'] / b['phases']['total']:.2f}x | "
                f"{res['wire']['all_wire'] / b['wire']['all_wire']:.2f}x |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
