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

    .venv/bin/python bench/bench_arx.py --reps 10 --warmup 10 --rounds 3
    .venv/bin/python bench/bench_arx.py --rows 1000000 --reps 1 --warmup 1
    .venv/bin/python bench/bench_arx.py --rows 10000000 --reps 1 --warmup 0 --jvm-heap 12g

``--rounds N`` runs the whole table N times (ARX and fedanon alternating setting by setting in
every round) and ends with one row per setting: the median and the worst of the N ratios, of
wall time and of CPU time. CPU time: fedanon's is this process's (``time.process_time``, every
thread); ARX's is its JVM's process CPU time over ``anonymizer.anonymize`` (every thread, its
collector and compiler included), read by a copy of the driver that this script compiles with
two more fields in its ``RESULT`` line (the driver itself is left as it is).

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

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema, resolve_params
from fedanon.experiments import arx_adult
from fedanon.readers.datadir import data_dir
from fedanon.readers.table_io import read_arrow
from fedanon.tables import Table
from fedanon.text import factorize, text_codes

QIDS = arx_adult.QIDS
RESULT = re.compile(
    r"RESULT rep=(\d+) .*? anonymize_s=([0-9.]+) cpu_s=([0-9.]+) .*? suppressed=(\d+) "
)
# The driver's lines that the compiled copy extends with the JVM's CPU time over the search.
CPU_PATCH = (
    (
        "long ta0 = System.nanoTime();",
        "long tc0 = ((com.sun.management.OperatingSystemMXBean) java.lang.management"
        ".ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime(); "
        "long ta0 = System.nanoTime();",
    ),
    (
        "long ta1 = System.nanoTime();",
        "long ta1 = System.nanoTime(); long tc1 = ((com.sun.management.OperatingSystemMXBean)"
        " java.lang.management.ManagementFactory.getOperatingSystemMXBean())"
        ".getProcessCpuTime();",
    ),
    ("anonymize_s=%.4f ", "anonymize_s=%.4f cpu_s=%.4f "),
    ("(ta1-ta0)/1e9, ", "(ta1-ta0)/1e9, (tc1-tc0)/1e9, "),
)


def discernibility_ratio(release: Table) -> float:
    """sum |E|^2 / n^2 over groups of identical QID strings (a DataFrame or an Arrow table)."""
    key = np.zeros(len(release), dtype=np.int64)
    for column in QIDS:
        codes, distinct = text_codes(release[column])
        key, _ = factorize(key * max(1, len(distinct)) + codes)
    sizes = np.bincount(key).astype(float)
    return float((sizes * sizes).sum()) / float(len(release)) ** 2


def repeat_extract(source: Path, target: Path, rows: int) -> None:
    """`source`'s records repeated to `rows` records in `target` (its header once), written
    by streaming the bytes: this process keeps no copy of the larger table, so its peak memory
    is fedanon's."""
    with source.open("rb") as f:
        header = f.readline()
        body = f.read()
    records = body.splitlines(keepends=True)
    if records and not records[-1].endswith(b"\n"):
        records[-1] += b"\n"
    with target.open("wb") as out:
        out.write(header)
        left = rows
        while left > 0:
            part = records[:left]
            out.writelines(part)
            left -= len(part)


def build_arx(arx: Path, work: Path) -> str:
    """Compile ArxBench.java into `work`; return the java class path."""
    if shutil.which("javac") is None:
        sys.exit("bench_arx: javac not found (Java 17 JDK needed)")
    classes = work / "classes"
    classpath = f"{arx / 'lib'}/*"
    source = (arx / "ArxBench.java").read_text(encoding="utf-8")
    for old, new in CPU_PATCH:
        if source.count(old) != 1:
            sys.exit(f"bench_arx: {arx / 'ArxBench.java'}: expected one '{old}' (driver changed)")
        source = source.replace(old, new)
    (work / "ArxBench.java").write_text(source, encoding="utf-8")
    subprocess.run(
        ["javac", "-d", str(classes), "-cp", classpath, str(work / "ArxBench.java")], check=True
    )
    return f"{classes}:{classpath}"


def run_arx(
    classpath: str, k: int, supp: str, reps: int, warmup: int, work: Path, heap: str | None
) -> tuple[float, float, float, int, float]:
    """ARX's median seconds (wall, the JVM's CPU) over `reps` calls after `warmup` calls in
    one JVM, DR of its release, its suppressed count and the largest child's peak RSS so far
    (MB: the JVMs run one after another, and ARX's grows with k and the budget only
    slightly)."""
    out = work / "releases"
    out.mkdir(exist_ok=True)
    java = ["java", f"-Xmx{heap}"] if heap else ["java"]  # the JVM's default: 1/4 of memory
    command = [*java, "-cp", classpath, "ArxBench", str(k), supp, "dm", str(warmup + reps)]
    proc = subprocess.Popen(
        [*command, str(data_dir()), str(out)], stdout=subprocess.PIPE, text=True
    )
    stdout, _ = proc.communicate()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the largest child so far
    if proc.returncode != 0:
        sys.exit(f"ArxBench k={k} supp={supp}: exit {proc.returncode}")
    warm, warm_cpu, suppressed = [], [], 0
    for match in RESULT.finditer(stdout):
        if int(match.group(1)) >= warmup:
            warm.append(float(match.group(2)))
            warm_cpu.append(float(match.group(3)))
        suppressed = int(match.group(4))
    release = read_arrow(out / f"arx-dm-s{supp}-k{k}.csv", ";")  # no pandas copy of 1M rows
    return (
        statistics.median(warm),
        statistics.median(warm_cpu),
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
    parser.add_argument("--rounds", type=int, default=1, help="the whole table this many times")
    parser.add_argument(
        "--jvm-heap", help="ARX's JVM maximum heap (java -Xmx), e.g. 12g for 10M rows"
    )
    args = parser.parse_args()
    arx_dir = args.arx
    keep = tempfile.TemporaryDirectory(prefix="bench-arx-data-") if args.rows else None
    if keep is not None:
        repeated = Path(keep.name) / "adult"
        repeated.mkdir()
        repeat_extract(arx_adult.folder() / "arx_adult.csv", repeated / "arx_adult.csv", args.rows)
        (repeated / "arx_hierarchies").symlink_to(arx_adult.folder() / "arx_hierarchies")
        os.environ["FEDANON_DATA_DIR"] = keep.name  # both tools read the repeated extract
    table = read_arrow(arx_adult.folder() / "arx_adult.csv")
    print(f"{len(table):,} rows, medians of {args.reps} warm calls, {args.rounds} round(s)")
    print(
        "| round | k | suppression | fedanon score | ARX ms (CPU) | fedanon ms (CPU) "
        "| fedanon/ARX wall | CPU | ARX DR | fedanon DR | suppressed ARX / fedanon "
        "| ARX peak MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios: dict[tuple[str, int, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-arx-") as tmp:
        work = Path(tmp)
        classpath = build_arx(arx_dir, work)
        for round_ in range(1, args.rounds + 1):
            for supp in args.supps.split(","):
                for k in (int(x) for x in args.ks.split(",")):
                    arx_s, arx_cpu, arx_dr, arx_sup, arx_mb = run_arx(
                        classpath, k, supp, args.reps, args.warmup, work, args.jvm_heap
                    )
                    for score in args.scores.split(","):
                        if "/" in score and float(supp) == 0:
                            continue
                        ours_s, ours_cpu, ours_dr, ours_sup = run_fedanon(
                            table, k, supp, args.reps, score
                        )
                        wall, cpu = ours_s / arx_s, ours_cpu / arx_cpu
                        ratios.setdefault((supp, k, score), []).append((wall, cpu))
                        print(
                            f"| {round_} | {k} | {float(supp):.0%} | {score} | "
                            f"{arx_s * 1000:.0f} ({arx_cpu * 1000:.0f}) | "
                            f"{ours_s * 1000:.0f} ({ours_cpu * 1000:.0f}) | {wall:.2f} | "
                            f"{cpu:.2f} | {arx_dr:.5f} | {ours_dr:.5f} | "
                            f"{arx_sup} / {ours_sup} | {arx_mb:.0f} |",
                            flush=True,
                        )
    print(f"\nfedanon/ARX over {args.rounds} round(s): median (worst)")
    print("| k | suppression | fedanon score | wall | CPU |")
    print("|---|---|---|---|---|")
    for (supp, k, score), values in ratios.items():
        walls = [w for w, _ in values]
        cpus = [c for _, c in values]
        print(
            f"| {k} | {float(supp):.0%} | {score} | {statistics.median(walls):.2f} "
            f"({max(walls):.2f}) | {statistics.median(cpus):.2f} ({max(cpus):.2f}) |"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nthis process's peak RSS (fedanon's runs, its table, ARX's releases): {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
