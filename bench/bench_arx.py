"""fedanon against ARX on ARX's own Adult job: k-anonymity, 8 QIDs, k = 5..100, suppression 0 / 2 %.

ARX is not part of fedanon and is never committed: this script compiles the benchmark driver
ArxBench.java (kept with the prebuilt ARX jars outside the repository, by default
``<data dir>/../anchors/arx``, or ``--arx DIR``) into a temporary folder with ``javac`` and runs
it with ``java`` (Java 17). For every (suppression, k) it runs ARX in one JVM (``--warmup``
untimed calls that pay the JVM's set-up and JIT compilation, then ``--reps`` timed calls) and
then fedanon in this process (one warm-up call, then ``--reps`` timed calls per score), so the
two alternate within one run.

Times are medians of the warm calls of the anonymization alone (ARX: ``anonymizer.anonymize``;
fedanon: ``anonymize_lkc``, which includes encoding the table and building the release). DR is
the discernibility ratio of the release, sum |E|^2 / n^2 over groups of equal QID strings, so
suppressed records (all QIDs ``*`` in ARX, at the roots in fedanon) count as one group.

The same job on both sides: ARX's driver marks ``salary-class`` insensitive and optimizes
its discernibility metric (DM), so fedanon runs with no class column (``salary-class`` is
carried through like any other column) and its default score for that job, discernibility,
with the default search: the row named ``default``. ``infogain`` rows make
``salary-class`` the class column (fedanon's default score once a class is given), a different
job that optimizes class purity, not DM. The default search (``auto``) is best-of for the
discernibility score under a budget (both candidate orders, the lower DR kept), greedy
otherwise; ``/greedy`` names the one-order search. fedanon reads the extract with its own
reader (the one ``fedanon anonymize lkc`` uses: an Arrow table of text, ``read_arrow``);
ARX's reading is outside its timing too.

    .venv/bin/python bench/bench_arx.py --reps 10 --warmup 10
    .venv/bin/python bench/bench_arx.py --rows 1000000 --reps 1 --warmup 1

``--rows N`` runs the same job on the extract repeated to N records (every record copied as it
is, so ARX's hierarchies cover every value), written once to a temporary data folder that both
tools read. The last column is the peak resident memory of ARX's JVM for that setting.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema, resolve_params
from fedanon.experiments import arx_adult
from fedanon.readers.datadir import data_dir
from fedanon.readers.table_io import read_arrow
from fedanon.tables import Table
from fedanon.text import factorize, text_codes

QIDS = arx_adult.QIDS
RESULT = re.compile(r"RESULT rep=(\d+) .*? anonymize_s=([0-9.]+) .*? suppressed=(\d+) ")


def discernibility_ratio(release: Table) -> float:
    """sum |E|^2 / n^2 over groups of identical QID strings (a DataFrame or an Arrow table)."""
    key = np.zeros(len(release), dtype=np.int64)
    for column in QIDS:
        codes, distinct = text_codes(release[column])
        key, _ = factorize(key * max(1, len(distinct)) + codes)
    sizes = np.bincount(key).astype(float)
    return float((sizes * sizes).sum()) / float(len(release)) ** 2


def build_arx(arx: Path, work: Path) -> str:
    """Compile ArxBench.java into `work`; return the java class path."""
    if shutil.which("javac") is None:
        sys.exit("bench_arx: javac not found (Java 17 JDK needed)")
    classes = work / "classes"
    classpath = f"{arx / 'lib'}/*"
    subprocess.run(
        ["javac", "-d", str(classes), "-cp", classpath, str(arx / "ArxBench.java")], check=True
    )
    return f"{classes}:{classpath}"


def run_arx(
    classpath: str, k: int, supp: str, reps: int, warmup: int, work: Path
) -> tuple[float, float, int, float]:
    """ARX's median seconds over `reps` calls after `warmup` calls in one JVM, DR of its
    release, its suppressed count and the largest child's peak RSS so far (MB: the JVMs run
    one after another, and ARX's grows with k and the budget only slightly)."""
    out = work / "releases"
    out.mkdir(exist_ok=True)
    command = ["java", "-cp", classpath, "ArxBench", str(k), supp, "dm", str(warmup + reps)]
    proc = subprocess.Popen(
        [*command, str(data_dir()), str(out)], stdout=subprocess.PIPE, text=True
    )
    stdout, _ = proc.communicate()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the largest child so far
    if proc.returncode != 0:
        sys.exit(f"ArxBench k={k} supp={supp}: exit {proc.returncode}")
    warm, suppressed = [], 0
    for match in RESULT.finditer(stdout):
        if int(match.group(1)) >= warmup:
            warm.append(float(match.group(2)))
        suppressed = int(match.group(3))
    release = pd.read_csv(
        out / f"arx-dm-s{supp}-k{k}.csv", sep=";", dtype=str, keep_default_na=False
    )
    return (
        statistics.median(warm),
        discernibility_ratio(release),
        suppressed,
        usage.ru_maxrss / 1024,
    )


def run_fedanon(
    table: Table, k: int, supp: str, reps: int, score: str
) -> tuple[float, float, float, int]:
    """fedanon's warm median seconds (wall, CPU of this process), DR of its release and its
    suppressed count.

    `score` ``default`` is ARX's job (no class column, fedanon's default score for it:
    discernibility); ``infogain`` makes ``salary-class`` the class column. A score may end in
    ``/greedy`` or ``/best-of`` (``discernibility/greedy``): that search instead of the
    default (``auto``: best-of under a budget with the discernibility score)."""
    score, _, search = score.partition("/")
    class_column = arx_adult.CLASS_COLUMN if score == "infogain" else None
    score = "discernibility" if score == "default" else score
    taxonomy = arx_adult.load_hierarchies(table)
    params = resolve_params("k-anonymity", len(QIDS), None, k, None)
    times, cpu, release = [], [], None
    for rep in range(reps + 1):
        schema = build_schema(taxonomy, table, QIDS, [], class_column)
        began, began_cpu = time.perf_counter(), time.process_time()
        release = anonymize_lkc(
            table, schema, params, score, suppress=supp, search=search or "auto"
        )
        if rep:
            times.append(time.perf_counter() - began)
            cpu.append(time.process_time() - began_cpu)
    assert release is not None
    suppressed = release.result.suppressed
    ratio = discernibility_ratio(release.table)
    return statistics.median(times), statistics.median(cpu), ratio, suppressed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="5,10,20,50,100")
    parser.add_argument("--supps", default="0,0.02")
    parser.add_argument("--reps", type=int, default=10, help="timed calls per tool and setting")
    parser.add_argument(
        "--warmup",
        type=int,
        default=10,
        help="ARX calls before timing (its JIT compiler needs several)",
    )
    parser.add_argument(
        "--scores",
        default="default,discernibility/greedy",
        help="fedanon's scores, one row each (ARX runs once per setting): 'default' is ARX's "
        "job (no class column, the default score), 'infogain' adds salary-class as the class "
        "column; '/greedy' or '/best-of' names the search (rows at 0 %% suppression are "
        "skipped: every search is greedy there)",
    )
    parser.add_argument(
        "--arx",
        type=Path,
        default=data_dir().parent / "anchors" / "arx",
        help="folder with ArxBench.java and lib/*.jar",
    )
    parser.add_argument("--rows", type=int, help="the extract repeated to this many records")
    args = parser.parse_args()
    arx_dir = args.arx
    keep = tempfile.TemporaryDirectory(prefix="bench-arx-data-") if args.rows else None
    if keep is not None:
        repeated = Path(keep.name) / "adult"
        repeated.mkdir()
        base = arx_adult.read_extract()
        copies = pd.concat([base] * -(-args.rows // len(base)), ignore_index=True)
        copies.iloc[: args.rows].to_csv(repeated / "arx_adult.csv", sep=";", index=False)
        (repeated / "arx_hierarchies").symlink_to(arx_adult.folder() / "arx_hierarchies")
        os.environ["FEDANON_DATA_DIR"] = keep.name  # both tools read the repeated extract
    table = read_arrow(arx_adult.folder() / "arx_adult.csv")
    print(f"{len(table):,} rows")
    print(f"medians of {args.reps} warm calls")
    print(
        "| k | suppression | fedanon score | ARX ms | fedanon ms (CPU) | fedanon/ARX | ARX DR "
        "| fedanon DR | suppressed ARX / fedanon | ARX peak MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench-arx-") as tmp:
        work = Path(tmp)
        classpath = build_arx(arx_dir, work)
        for supp in args.supps.split(","):
            for k in (int(x) for x in args.ks.split(",")):
                arx_s, arx_dr, arx_sup, arx_mb = run_arx(
                    classpath, k, supp, args.reps, args.warmup, work
                )
                for score in args.scores.split(","):
                    if "/" in score and float(supp) == 0:
                        continue
                    ours_s, ours_cpu, ours_dr, ours_sup = run_fedanon(
                        table, k, supp, args.reps, score
                    )
                    print(
                        f"| {k} | {float(supp):.0%} | {score} | {arx_s * 1000:.0f} | "
                        f"{ours_s * 1000:.0f} ({ours_cpu * 1000:.0f}) | {ours_s / arx_s:.2f} | "
                        f"{arx_dr:.5f} | {ours_dr:.5f} | {arx_sup} / {ours_sup} | {arx_mb:.0f} |",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
