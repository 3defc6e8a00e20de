"""(alpha,k) benchmarks: local recoding and lossy join on Adult and Adult blown up to 1M rows,
and the count-query workload's cost per 1000 queries. Prints Markdown tables.

    python bench/bench_alphak.py                 # every size, each method in a fresh process
    python bench/bench_alphak.py one METHOD ROWS # one point (ROWS = 0: Adult itself)

Setting: QID = the paper's eight Adult attributes, sensitive = occupation, k = 2, alpha = 0.33,
the LKC authors' taxonomy. Blown-up data as in bench_lkc.py (copies of every record with the
numerical QIDs shifted by a few units). Each point runs in a fresh subprocess so that the peak
RSS (ru_maxrss) is its own; times are wall seconds with CPU seconds in brackets (the machine is
shared). "queries" draws 1000 queries (qd = 4, s = 0.05) on the raw table and answers them on
the local-recoding table and on the lossy-join pair.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from bench_lkc import ADULT, blow_up
from machine_info import describe

from fedanon.algorithms.alphak.api import anonymize_alpha_k
from fedanon.experiments.alphak.reproduce import ADULT_QIDS, SENSITIVE
from fedanon.readers.datadir import data_dir
from fedanon.readers.table_io import read_table
from fedanon.release import Release
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.loader import load_taxonomy
from fedanon.utility.queries import QueryWorkload

TAXONOMY = data_dir() / "adult" / "lkc_paper_taxonomy.hchy"
SIZES = (0, 200_000, 1_000_000)


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _release(table: pd.DataFrame, taxonomy: TaxonomyFile, method: str) -> Release:
    """The benchmark's setting: Adult's QIDs, alpha = 0.33, k = 2, seed 1."""
    return anonymize_alpha_k(
        table,
        qids=ADULT_QIDS,
        sensitive_column=SENSITIVE,
        alpha="0.33",
        k=2,
        method=method,
        taxonomy=taxonomy,
        seed=1,
    )


def run_method(method: str, data: Path) -> dict[str, float]:
    table = read_table(data)
    taxonomy = load_taxonomy(TAXONOMY)
    t0, c0 = _clock()
    release = _release(table, taxonomy, method)
    t1, c1 = _clock()
    return {
        "rows": len(table),
        "seconds": t1 - t0,
        "cpu": c1 - c0,
        "classes": release.report["classes"],
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_queries(data: Path) -> dict[str, float]:
    table = read_table(data)
    taxonomy = load_taxonomy(TAXONOMY)
    local, lossy = (_release(table, taxonomy, method) for method in ("local", "lossy-join"))
    t0, c0 = _clock()
    workload = QueryWorkload.generate(table, ADULT_QIDS, SENSITIVE, 4, 0.05, 1000, seed=1)
    t1, c1 = _clock()
    workload.estimate_generalized(local.table, taxonomy.taxonomies)
    t2, c2 = _clock()
    workload.estimate_lossy_join(lossy.tables["nss"], lossy.tables["ss"])
    t3, c3 = _clock()
    return {
        "rows": len(table),
        "generate": t1 - t0,
        "cpu_generate": c1 - c0,
        "generalized": t2 - t1,
        "cpu_generalized": c2 - c1,
        "lossy": t3 - t2,
        "cpu_lossy": c3 - c2,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _data(rows: int) -> Path:
    if rows == 0:
        return ADULT
    path = Path(tempfile.mkdtemp()) / f"adult-{rows}.csv"
    blow_up(rows, path)
    return path


def child(args: list[str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    if argv and argv[0] == "one":
        method, rows = argv[1], int(argv[2])
        data = _data(rows)
        result = run_queries(data) if method == "queries" else run_method(method, data)
        print(json.dumps(result))
        return 0
    print(describe(["numpy", "pandas"]), "\n")
    print("| method | rows | seconds (CPU) | classes | peak RSS MB | CPU / Adult CPU |")
    print("|---|---|---|---|---|---|")
    for method in ("local", "lossy-join", "anatomy"):
        base = None
        for rows in SIZES:
            r = child(["one", method, str(rows)])
            base = base or r["cpu"]
            print(
                f"| {method} | {r['rows']} | {r['seconds']:.2f} ({r['cpu']:.2f}) | "
                f"{r['classes']} | {r['peak_mb']:.0f} | {r['cpu'] / base:.1f}x |",
                flush=True,
            )
    print(
        "\n| rows | draw 1000 queries s (CPU) | answer on local table s (CPU) | "
        "answer on NSS/SS s (CPU) | peak RSS MB |"
    )
    print("|---|---|---|---|---|")
    for rows in SIZES:
        r = child(["one", "queries", str(rows)])
        print(
            f"| {r['rows']} | {r['generate']:.2f} ({r['cpu_generate']:.2f}) | "
            f"{r['generalized']:.2f} ({r['cpu_generalized']:.2f}) | "
            f"{r['lossy']:.2f} ({r['cpu_lossy']:.2f}) | {r['peak_mb']:.0f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
