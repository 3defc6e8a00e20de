"""Randomization (RA, enhanced RA) at scale, and federated against centralized in one run.

Part 1 (--rows, default 10^6): Adult's training rows resampled with replacement to N rows (the
9 QIDs of the paper plus the other columns, all text), randomized in memory by
`anonymize_randomize` for RA uniform, RA optimal and enhanced RA(3). Each case runs in a fresh
child process that reports wall and CPU seconds of the randomization and its peak resident
memory above the memory held before it started (Linux: VmHWM after resetting it through
/proc/self/clear_refs).

Part 2 (--parties, default 3): Adult's 30,162 rows split over N real party daemons on loopback
with mutual TLS (`fedanon.leader.sim.federation`), one federated RA run (ring secure sum, local
randomization, secure set union) timed per phase, and the centralized run on the same table,
with the check that both plans have the same marginals and Pa.
Run: ``FEDANON_DATA_DIR=... .venv/bin/python bench/bench_randomize.py [--rows N] [--parties N]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np

from fedanon.algorithms.randomization.adult import ADULT_QIDS
from fedanon.readers.datadir import data_dir

QIDS = ADULT_QIDS
CASES = [
    ("RA uniform p", {"method": "ra", "p": "uniform"}),
    ("RA optimal p", {"method": "ra", "p": "optimal"}),
    ("enhanced RA k=3", {"method": "enhanced", "attrs": 3}),
]


def _status(field: str) -> int:
    """A kB figure of /proc/self/status (VmRSS, VmHWM)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _adult():
    from fedanon.readers.table_io import read_table

    return read_table(data_dir() / "adult" / "adult_train.csv")


def _one_case(rows: int, kwargs: dict, queue: multiprocessing.Queue) -> None:
    from fedanon.algorithms.randomization.api import anonymize_randomize

    adult = _adult()
    pick = np.random.default_rng(0).integers(0, len(adult), rows)
    table = adult.iloc[pick].reset_index(drop=True)
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak RSS to the current RSS
    before = _status("VmRSS")
    wall, cpu = time.perf_counter(), time.process_time()
    release = anonymize_randomize(table, qids=QIDS, seed=1, **kwargs)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    queue.put(
        {
            "wall": wall,
            "cpu": cpu,
            "peak_mb": (_status("VmHWM") - before) / 1024,
            "table_mb": table.memory_usage(deep=True).sum() / 2**20,
            "Pa": release.report["Pa"],
            "changed": release.report["changed_cell_fraction"],
        }
    )


def scale(rows: int) -> None:
    print(f"## {rows:,} rows (Adult resampled), {len(QIDS)} QIDs, in memory")
    print(
        "| case | wall s | CPU s | peak memory above the loaded table, MB | table, MB | Pa | "
        "changed cells |"
    )
    print("|---|---|---|---|---|---|---|")
    context = multiprocessing.get_context("spawn")
    for name, kwargs in CASES:
        queue = context.Queue()
        child = context.Process(target=_one_case, args=(rows, kwargs, queue))
        child.start()
        result = queue.get()
        child.join()
        print(
            f"| {name} | {result['wall']:.2f} | {result['cpu']:.2f} | "
            f"{result['peak_mb']:.0f} | {result['table_mb']:.0f} | {result['Pa']:.2f} | "
            f"{result['changed']:.4f} |",
            flush=True,
        )


def federated(parties: int, sum_mode: str) -> None:
    from fedanon.algorithms.randomization.api import anonymize_randomize
    from fedanon.algorithms.randomization.coding import encode, observed_domain
    from fedanon.algorithms.randomization.jobspec import RandomizeSpec
    from fedanon.leader.kinds.randomize import RandomizeLeaderJob, run_randomize
    from fedanon.leader.sim import federation, split_table

    adult = _adult()
    mark = time.perf_counter()
    central = anonymize_randomize(adult, qids=QIDS, seed=1)
    central_s = time.perf_counter() - mark
    spec = RandomizeSpec(tuple(QIDS), tuple(observed_domain(adult[q]) for q in QIDS))
    plans: list = []
    with federation(split_table(adult, parties, "random", 1), None) as fed:
        job = RandomizeLeaderJob(
            fed.hops, fed.leader_tls, spec, Path("/tmp/bench-ra.csv"), sum_mode=sum_mode
        )
        report = run_randomize(job, on_plan=plans.append)
    union = encode(adult, QIDS).histograms()
    exact = all(np.array_equal(a, b) for a, b in zip(plans[0].marginals, union, strict=True))
    seconds = report["seconds"]
    leader_in = sum(report["leader_bytes"]["received"].values())
    print(
        f"## federated RA over {parties} daemons ({sum_mode} sum, mutual TLS) vs centralized, "
        f"Adult {len(adult):,} rows"
    )
    print(
        "| run | handshake s | marginals s | randomize s | union s | total s | Pa | "
        "leader received, MB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| federated | {seconds['handshake']:.2f} | {seconds['marginals']:.3f} | "
        f"{seconds['randomize']:.3f} | {seconds['union']:.2f} | {seconds['total']:.2f} | "
        f"{report['Pa']:.4f} | {leader_in / 2**20:.1f} |"
    )
    print(
        f"| centralized | - | - | {central_s:.3f} | - | {central_s:.3f} | "
        f"{central.report['Pa']:.4f} | - |"
    )
    print(
        f"global marginals == union marginals: {exact}; Pa equal: "
        f"{report['Pa'] == central.report['Pa']}"
    )
    print(json.dumps({"party_bytes": report["party_bytes"]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--parties", type=int, default=3)
    parser.add_argument("--sum-mode", choices=("ring", "pairwise"), default="ring")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--skip-federated", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from machine_info import describe

    print(describe(["numpy", "pandas", "grpcio", "cryptography"]))
    if not args.skip_scale:
        scale(args.rows)
    if not args.skip_federated:
        federated(args.parties, args.sum_mode)


if __name__ == "__main__":
    main()
