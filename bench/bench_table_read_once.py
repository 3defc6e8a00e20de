"""A party daemon's table read with its digest, in one process: the read before session 13
(``read_arrow`` of the path, then the file read again for its SHA-256) against the read once
(``read_arrow_once`` under ``recording_inputs``: the bytes hashed as Arrow parses them), for a
CSV table and the same table as Parquet, alternated A B A B; CPU (``time.process_time``) and
wall medians, and new / old.

    nice -n 5 .venv/bin/python bench/bench_table_read_once.py TABLE.csv [--repeat 7]

The Parquet file is written beside a temporary copy (never next to TABLE). Both reads are
checked to give the same table and the same digest.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from fedanon.readers.inputs import recording_inputs
from fedanon.readers.table_io import read_arrow, read_arrow_once


def before(path: Path) -> tuple[pa.Table, bytes]:
    table = read_arrow(path)
    with path.open("rb") as file:
        return table, hashlib.file_digest(file, "sha256").digest()


def once(path: Path) -> tuple[pa.Table, bytes]:
    with recording_inputs() as files:
        table = read_arrow_once(path)
    return table, files[0][1]


def timed(read: Callable[[Path], object], path: Path) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    read(path)
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        parquet = Path(work) / "table.parquet"
        pq.write_table(read_arrow(args.table), parquet)
        print("| table | old CPU s | once CPU s | once/old | old wall s | once wall s | once/old |")
        print("|---|---|---|---|---|---|---|")
        for path in (args.table, parquet):
            old, new = before(path), once(path)
            assert old[0].equals(new[0]) and old[1] == new[1], path
            runs: dict[str, list[tuple[float, float]]] = {"old": [], "once": []}
            for _ in range(args.repeat):
                for name, read in (("old", before), ("once", once)):
                    runs[name].append(timed(read, path))
            o, n = ([statistics.median(r[i] for r in runs[k]) for i in (0, 1)] for k in runs)
            size = path.stat().st_size / (1 << 20)
            print(
                f"| {path.suffix} ({size:.0f} MiB) | {o[0]:.3f} | {n[0]:.3f} | {n[0] / o[0]:.3f}"
                f" | {o[1]:.3f} | {n[1]:.3f} | {n[1] / o[1]:.3f} |"
            )


if __name__ == "__main__":
    main()
