"""One table read, before and after a change to the readers, side by side in one run: each
read in fresh processes (in each, the fastest of ``--reads`` reads: CPU of all its threads,
wall; and the process's peak RSS; then the median over processes), the two sides
alternated A B A B.

    nice -n 5 .venv/bin/python bench/bench_table_read_once.py [--before be4e6fd] [--rows 1000000]

``--before REV``: the ``fedanon`` package of that commit (``git archive``) is imported instead
of this tree's. The table is ``--rows`` rows drawn from Adult with replacement (seed 1),
written as CSV and as Parquet in a temporary directory. The reads (both sides must give the
same table, checked by a digest of its cells):

* ``csv``, ``parquet``: ``read_arrow`` (what the CLI and the central algorithms read);
* ``parquet 1 col``: ``read_arrow(columns=[...])`` (what a Dask worker reads, column by column);
* ``csv digest``: the party daemon's read under ``recording_inputs`` (before session 13
  round 2: ``read_arrow_once``; after: ``read_arrow``);
* ``release csv``: ``read_release`` (pandas; every ``fedanon check``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import hashlib, json, sys, time
from pathlib import Path
import fedanon.readers.table_io as tio
from fedanon.readers.inputs import recording_inputs
case, path = sys.argv[1], Path(sys.argv[2])
read = {
    "csv": lambda: tio.read_arrow(path),
    "parquet": lambda: tio.read_arrow(path),
    "parquet 1 col": lambda: tio.read_arrow(path, columns=["age"]),
    "csv digest": lambda: getattr(tio, "read_arrow_once", tio.read_arrow)(path),
    "release csv": lambda: read_release(str(path), None),
}[case]
if case == "release csv":  # pandas only where it is read
    from fedanon.readers.release import read_release
times = []
for _ in range(int(sys.argv[3])):  # the fastest of a few reads in one process
    cpu, wall = time.process_time(), time.perf_counter()
    with recording_inputs() as files:
        result = read() if case == "csv digest" else None
    if result is None:
        result = read()
    times.append((time.process_time() - cpu, time.perf_counter() - wall))
    del result
    result = None
cpu, wall = min(times)  # the least disturbed by the machine's other tenants
result = read()
status = Path("/proc/self/status").read_text().split("VmHWM:")[1]  # this image's own peak
peak = int(status.split()[0]) / 1024
if hasattr(result, "to_pandas"):
    cells = [result.column(i).to_pylist()[:1000] for i in range(result.num_columns)]
    shape = [result.num_rows, result.column_names]
else:
    cells = [result[c].tolist()[:1000] for c in result.columns]
    shape = [len(result), [str(c) for c in result.columns]]
check = hashlib.sha256(json.dumps([shape, cells, [d.hex() for _, d in files]]).encode())
print(json.dumps({"cpu": cpu, "wall": wall, "peak": peak, "check": check.hexdigest()}))
"""


def tables(rows: int, work: Path) -> dict[str, Path]:
    """The CSV and Parquet tables: `rows` rows of Adult drawn with replacement."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fedanon.readers.datadir import data_dir

    adult = pd.read_csv(data_dir() / "adult" / "adult_all.csv", dtype=str, keep_default_na=False)
    drawn = adult.sample(n=rows, replace=True, random_state=1)
    csv, parquet = work / "adult.csv", work / "adult.parquet"
    drawn.to_csv(csv, index=False)
    pq.write_table(pa.Table.from_pandas(drawn, preserve_index=False), parquet)
    return {"csv": csv, "parquet": parquet}


def before_tree(rev: str, work: Path) -> Path:
    """The `fedanon` package of commit `rev`, extracted under `work`."""
    archive = work / "before.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", rev, "fedanon"], cwd=REPO, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(work / "before", filter="data")
    return work / "before"


def one(
    case: str, path: Path, before: Path | None, work: Path, reads: int
) -> dict[str, float | str]:
    env = dict(os.environ)
    if before is not None:
        env["PYTHONPATH"] = str(before)
    env.pop("PYTHONSTARTUP", None)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, case, str(path), str(reads)],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, float | str] = json.loads(out)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="be4e6fd", help="commit read as 'before'")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7, help="processes per side")
    parser.add_argument("--reads", type=int, default=5, help="reads per process (the fastest)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        work = Path(name)
        files = tables(args.rows, work)
        before = before_tree(args.before, work)
        cases = {
            "csv": files["csv"],
            "parquet": files["parquet"],
            "parquet 1 col": files["parquet"],
            "csv digest": files["csv"],
            "release csv": files["csv"],
        }
        size = {k: p.stat().st_size / (1 << 20) for k, p in files.items()}
        print(f"{args.rows} rows: CSV {size['csv']:.0f} MiB, Parquet {size['parquet']:.1f} MiB;")
        print(
            f"before = {args.before}, after = this tree; {args.repeat} processes per side, "
            f"the fastest of {args.reads} reads in each; medians over processes"
        )
        print()
        print(
            "| read | CPU s before | after | after/before | wall s before | after | ratio "
            "| peak MiB before | after | ratio |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for case, path in cases.items():
            runs: dict[str, list[dict[str, float | str]]] = {"before": [], "after": []}
            for _ in range(args.repeat):
                runs["before"].append(one(case, path, before, work, args.reads))
                runs["after"].append(one(case, path, None, work, args.reads))
            checks = {r["check"] for side in runs.values() for r in side}
            assert len(checks) == 1, f"{case}: the two sides read different tables"
            row = [case]
            for key in ("cpu", "wall", "peak"):
                b, a = (statistics.median(float(r[key]) for r in runs[s]) for s in runs)
                digits = 0 if key == "peak" else 3
                row += [f"{b:.{digits}f}", f"{a:.{digits}f}", f"{a / b:.3f}"]
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
