"""Benchmarks of kACTUS: the paper's scalability run and kACTUS vs Mondrian vs TDS on Adult.

Scalability (kACTUS paper, section 5.8): Adult (45,222 records) blown up by a scale factor
sigma: every record t is kept and sigma - 1 variants of it are added, each keeping the values
of rho = 3 of the QIDs (chosen at random per variant) and drawing the others uniformly from
the QID's domain (the distinct values of Adult); the class is t's. 7 QIDs, k = 150. Only the
QIDs and the class are generated: nothing else takes part in the tree or the anonymize phase.
Every sigma runs in a fresh process so that its peak memory (max RSS) is its own.

Run: ``.venv/bin/python bench/bench_kactus.py [--sigmas 5,10,20,30] [--compare]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

QIDS = ["age", "workclass", "education", "martial-status", "occupation", "race", "sex"]
RHO = 3
K = 150


def blow_up(adult: pd.DataFrame, sigma: int, seed: int = 0) -> pd.DataFrame:
    """sigma * len(adult) records: the originals and sigma - 1 variants of each."""
    rng = np.random.default_rng(seed)
    n = len(adult)
    columns: dict[str, Any] = {}
    keep = np.zeros((n * (sigma - 1), len(QIDS)), dtype=bool)
    chosen = np.argsort(rng.random(keep.shape), axis=1)[:, :RHO]
    np.put_along_axis(keep, chosen, True, axis=1)
    for j, name in enumerate(QIDS):
        codes, domain = pd.factorize(adult[name])
        copies = np.tile(codes, sigma - 1)
        drawn = rng.integers(0, len(domain), len(copies))
        all_codes = np.concatenate([codes, np.where(keep[:, j], copies, drawn)])
        # pandas-stubs 2.3 types `codes` as Sequence[int]; pandas takes an integer array.
        columns[name] = pd.Categorical.from_codes(all_codes, categories=domain)  # type: ignore[arg-type]
    columns["class"] = np.tile(adult["class"].to_numpy(), sigma)
    return pd.DataFrame(columns)


def run_one(sigma: int) -> dict[str, object]:
    from fedanon.algorithms.kactus.api import anonymize_kactus
    from fedanon.utility.benchmark_tables import load_table

    table = blow_up(load_table("adult"), sigma)
    began = time.perf_counter()
    cpu_began = time.process_time()
    release = anonymize_kactus(table, class_column="class", qids=QIDS, k=K, seed=1)
    total = time.perf_counter() - began
    cpu = time.process_time() - cpu_began
    seconds = release.report["seconds"]
    return {
        "sigma": sigma,
        "rows": len(table),
        "tree_s": seconds["tree"],
        "anonymize_s": seconds["anonymize"],
        "total_s": round(total, 2),
        "cpu_s": round(cpu, 2),
        "groups": release.report["groups"]["count"],
        "dropped": release.report["dropped"],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def compare_on_adult(k: int) -> list[tuple[str, float, int]]:
    """Seconds of each method on Adult (45,222 records, 14 QIDs; TDS with the authors'
    taxonomy and dynamic numeric splits, the k-anonymity preset of LKC)."""
    from fedanon.algorithms.kactus.api import anonymize_kactus
    from fedanon.algorithms.mondrian.api import anonymize_mondrian
    from fedanon.algorithms.tds.api import anonymize_lkc, build_schema
    from fedanon.readers.datadir import data_dir
    from fedanon.schema import LKCParams
    from fedanon.taxonomy.loader import load_taxonomy
    from fedanon.utility.benchmark_tables import load_table

    adult = load_table("adult")
    qids = [c for c in adult.columns if c != "class"]
    out = []
    for name, run in (
        (
            "kactus",
            lambda: anonymize_kactus(adult, class_column="class", k=k, seed=1).report["groups"],
        ),
        (
            "mondrian",
            lambda: anonymize_mondrian(adult, class_column="class", k=k, seed=1).report["groups"],
        ),
    ):
        began = time.perf_counter()
        groups = run()
        out.append((name, time.perf_counter() - began, groups["count"]))
    taxonomy = load_taxonomy(data_dir() / "adult" / "lkc_paper_taxonomy.hchy")
    numeric = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
    began = time.perf_counter()
    schema = build_schema(taxonomy, adult, qids, [], "class", numeric)
    release = anonymize_lkc(adult, schema, LKCParams.of(len(qids), k, 1))
    out.append(("tds", time.perf_counter() - began, release.report["groups"]["partitions"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sigmas", default="5,10,20,30", help="scale factors")
    parser.add_argument("--compare", action="store_true", help="also kACTUS vs Mondrian vs TDS")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child process mode
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one)))
        return
    print(f"load average before: {os.getloadavg()}, cores: {os.cpu_count()}")
    print(
        f"{'sigma':>5} {'rows':>10} {'tree s':>8} {'anon s':>8} {'total s':>8} "
        f"{'CPU s':>8} {'groups':>6} {'peak MB':>8}"
    )
    for sigma in (int(s) for s in args.sigmas.split(",")):
        child = subprocess.run(
            [sys.executable, __file__, "--one", str(sigma)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(child.stdout.strip().splitlines()[-1])
        print(
            f"{r['sigma']:>5} {r['rows']:>10,} {r['tree_s']:>8.2f} {r['anonymize_s']:>8.2f} "
            f"{r['total_s']:>8.2f} {r['cpu_s']:>8.2f} {r['groups']:>6} {r['peak_rss_mb']:>8.0f}",
            flush=True,
        )
    print(f"load average after: {os.getloadavg()}")
    if args.compare:
        print("\nAdult 45,222 records, 14 QIDs, k = 50")
        for name, seconds, groups in compare_on_adult(50):
            print(f"{name:>9} {seconds:8.2f} s {groups:>6} groups")


if __name__ == "__main__":
    main()
