"""Centralized LKC benchmarks (issue: foundation). Prints Markdown tables.

    python bench/bench_lkc.py adult            # (a) Adult, L=4 K=20 C=0.2, phases + peak RSS
    python bench/bench_lkc.py scale            # (b) Adult blown up to 200K..1M rows, L=4 K=20 C=1
    python bench/bench_lkc.py one ROWS         # one scalability point (run in a fresh process)
    python bench/bench_lkc.py growth           # (d) 1M, 2M, 5M, 10M rows: time and peak memory

Each measurement runs in a fresh subprocess so that peak RSS (ru_maxrss) belongs to it alone;
the blown-up CSV is written by another subprocess first, so generating it is not measured.
Blown-up data: every Adult record plus variations of it (numerical QIDs shifted by a few units,
kept inside the taxonomy's root interval); written once to a temporary CSV so that reading is
part of the end-to-end time, as in the paper's Fig. 9.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema
from fedanon.readers.datadir import data_dir
from fedanon.readers.table_io import read_table, write_table
from fedanon.schema import LKCParams
from fedanon.taxonomy.loader import load_taxonomy

ADULT = data_dir() / "adult" / "adult_all.csv"
TAXONOMY = data_dir() / "adult" / "lkc_paper_taxonomy.hchy"


def run_once(data: Path, L: int, K: int, C: str) -> dict[str, float]:
    """Read, anonymize, write one table; seconds per phase and peak RSS in MB."""
    with tempfile.TemporaryDirectory() as tmp:  # each release is 146 MB at 1M rows: not kept
        return _timed_run(data, L, K, C, Path(tmp) / "release.csv")


def _timed_run(data: Path, L: int, K: int, C: str, out: Path) -> dict[str, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    table = read_table(data)
    taxonomy = load_taxonomy(TAXONOMY)
    t1, c1 = time.perf_counter(), time.process_time()
    schema = build_schema(taxonomy, table)
    release = anonymize_lkc(table, schema, LKCParams.of(L, K, C))
    t2, c2 = time.perf_counter(), time.process_time()
    write_table(release.table, out)
    t3, c3 = time.perf_counter(), time.process_time()
    return {
        "rows": len(table),
        "read": t1 - t0,
        "anonymize": t2 - t1,
        "write": t3 - t2,
        "total": t3 - t0,
        "cpu_read": c1 - c0,
        "cpu_anonymize": c2 - c1,
        "cpu_write": c3 - c2,
        "cpu_total": c3 - c0,
        "engine": release.report["seconds"]["anonymize"],
        "specializations": release.report["specializations"],
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def blow_up(rows: int, path: Path, seed: int = 1) -> None:
    """Adult repeated to `rows` records; copies get small shifts of the numerical QIDs."""
    base = pd.read_csv(ADULT, dtype=str, keep_default_na=False)
    taxonomy = load_taxonomy(TAXONOMY)
    rng = np.random.default_rng(seed)
    reps = -(-rows // len(base))
    out = pd.concat([base] * reps, ignore_index=True).iloc[:rows].copy()
    copy_index = np.repeat(np.arange(reps), len(base))[:rows]
    for column, tax in taxonomy.taxonomies.items():
        if tax.kind != "numeric" or column not in out.columns:
            continue
        values = pd.to_numeric(out[column]).to_numpy(dtype=np.int64)
        shift = rng.integers(-2, 3, rows) * (copy_index > 0)
        lo, hi = tax.node_lo[0], tax.node_hi[0]
        out[column] = np.clip(values + shift, lo, hi - 1).astype(np.int64)
    write_table(out, path)


def _pair(r: dict[str, float], phase: str) -> str:
    """Wall seconds with CPU seconds in brackets (the machine is shared: CPU is the steadier)."""
    return f"{r[phase]:.2f} ({r['cpu_' + phase]:.2f})"


def child(args: list[str]) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def growth() -> int:
    """(d): the same job at 1M..10M rows; peak RSS and time against rows."""
    print(
        "| rows | read s (CPU) | anonymize s (CPU) | write s (CPU) | total s (CPU) | "
        "specializations | peak RSS MB | RSS bytes/row |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for rows in (1_000_000, 2_000_000, 5_000_000, 10_000_000):
        r = child(["one", str(rows)])
        print(
            f"| {rows} | {_pair(r, 'read')} | {_pair(r, 'anonymize')} | {_pair(r, 'write')} | "
            f"{_pair(r, 'total')} | {r['specializations']} | {r['peak_mb']:.0f} | "
            f"{r['peak_mb'] * 2**20 / rows:.0f} |",
            flush=True,
        )
    return 0


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else "adult"
    if mode == "make":
        blow_up(int(argv[1]), Path(argv[2]))
        return 0
    if mode == "run":
        print(json.dumps(run_once(Path(argv[1]), 4, 20, "1")))
        return 0
    if mode == "one":
        rows = int(argv[1])
        if rows == 0:
            print(json.dumps(run_once(ADULT, 4, 20, "0.2")))
            return 0
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"adult-{rows}.csv"
            subprocess.run([sys.executable, __file__, "make", str(rows), str(path)], check=True)
            print(json.dumps(child(["run", str(path)])))
        return 0
    if mode == "growth":
        return growth()
    if mode == "adult":
        r = child(["one", "0"])
        print(
            "| rows | read s (CPU) | anonymize s (CPU) | write s (CPU) | total s (CPU) | "
            "peak RSS MB |"
        )
        print("|---|---|---|---|---|---|")
        print(
            f"| {r['rows']} | {_pair(r, 'read')} | {_pair(r, 'anonymize')} | "
            f"{_pair(r, 'write')} | {_pair(r, 'total')} | {r['peak_mb']:.0f} |"
        )
        return 0
    print(
        "| rows | read s (CPU) | anonymize s (CPU) | write s (CPU) | total s (CPU) | "
        "specializations | peak RSS MB |"
    )
    print("|---|---|---|---|---|---|---|")
    for rows in (200_000, 400_000, 600_000, 800_000, 1_000_000):
        r = child(["one", str(rows)])
        print(
            f"| {rows} | {_pair(r, 'read')} | {_pair(r, 'anonymize')} | {_pair(r, 'write')} | "
            f"{_pair(r, 'total')} | {r['specializations']} | {r['peak_mb']:.0f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
