"""One party's LKC run on the one-process engine and on the Dask engine (row shards).

The synthetic hospital table of `--rows` rows is written once as a Parquet dataset of
`--files` partitions (generated 1M rows at a time, cached under --cache). The local engine
reads it whole; the Dask engine's daemon reads only its footers, each worker its own files.
Prints: wall time of the whole run (encode +
specializations + the generalized table), the number of steps, the Dask engine's overhead per
step (its counting time minus the local engine's, per step), and the peak resident memory of
the daemon process and of the worker processes. The two engines run in separate child
processes so that each peak is its own. bench/RESULTS.md has the numbers and the projection.

    nice .venv/bin/python bench/bench_dask_party.py --rows 2000000 --shards 2 --workers 2
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing
import time
from pathlib import Path

import pandas as pd

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.engines.sharded import ShardedParty
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.readers.sources import FilesShard, ParquetSource
from fedanon.schema import LKCParams
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy

PARAMS = LKCParams.of(3, 20, "0.2")


CHUNK = 1_000_000


def _dataset(rows: int, files: int, cache: Path) -> Path:
    """The table as `files` Parquet partitions (written once; chunk i uses seed i)."""
    where = cache / f"hospital-{rows}-{files}"
    if (where / "done").exists():
        return where
    where.mkdir(parents=True, exist_ok=True)
    per_file = -(-rows // files)
    written = 0
    for index in range(files):
        size = min(per_file, rows - written)
        parts = [
            generate_hospital(min(CHUNK, size - at), seed=index * 1000 + at // CHUNK)
            for at in range(0, size, CHUNK)
        ]
        frame = pd.concat(parts, ignore_index=True).drop(columns=["patient_id"]).astype(str)
        frame.to_parquet(where / f"part-{index:04d}.parquet", index=False)
        written += size
    (where / "done").write_text("ok")
    return where


def _peak_mb() -> int:
    """This process's peak resident memory (VmHWM: its own, unlike ru_maxrss, which a
    spawned process inherits from the parent it was forked from)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return 0


def _run(engine: str, data: Path, shards: int, workers: int, out: multiprocessing.Queue) -> None:
    source = ParquetSource(data)
    taxonomy = load_taxonomy(hospital_taxonomy_path(), data_columns=source.columns)
    began = time.perf_counter()
    cluster = client = None
    party: LocalParty | ShardedParty
    if engine == "local":
        table = source.frame()
        schema = copy.deepcopy(build_schema(taxonomy, table))
        party = LocalParty(schema, table)
    else:
        from distributed import Client

        from fedanon.algorithms.tds.engines.sharded import local_cluster

        cluster = local_cluster(workers, shards)
        client = Client(cluster)
        first = FilesShard((source.files[0],)).load(source.columns)  # the dynamic/class checks
        schema = copy.deepcopy(build_schema(taxonomy, first))
        del first
        party = ShardedParty(client, schema, source.shards(shards), source.columns)
    opened = time.perf_counter()
    result = LKCEngine(schema, PARAMS).run(party)
    released = party.generalized_table()
    done = time.perf_counter()
    worker_peak = 0
    if client is not None:
        worker_peak = sum(client.run(_peak_mb).values())
        party.close()
        client.close()
        if cluster is not None:
            cluster.close()
    out.put(
        {
            "engine": engine,
            "rows": len(released),
            "steps": len(result.specializations),
            "open_s": round(opened - began, 2),
            "run_s": round(done - opened, 2),
            "counting_s": round(result.seconds_counting, 2),
            "daemon_peak_mb": _peak_mb(),
            "workers_peak_mb": worker_peak,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="worker processes (0: threads)")
    parser.add_argument("--engines", default="local,dask")
    parser.add_argument("--files", type=int, default=8, help="Parquet partitions")
    parser.add_argument("--cache", default="/tmp/fedanon-bench-dask", help="dataset cache")
    args = parser.parse_args()
    data = _dataset(args.rows, args.files, Path(args.cache))
    results = []
    context = multiprocessing.get_context("spawn")
    for engine in args.engines.split(","):
        queue = context.Queue()
        child = context.Process(target=_run, args=(engine, data, args.shards, args.workers, queue))
        child.start()
        results.append(queue.get())
        child.join()
        print(json.dumps(results[-1]), flush=True)
    print(
        f"\n{args.rows:,} rows in {args.files} Parquet files, {args.shards} shards, "
        f"{args.workers} worker processes\n"
    )
    print("| engine | steps | open s | run s | counting s | daemon peak MB | workers' peaks MB |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['engine']} | {r['steps']} | {r['open_s']} | {r['run_s']} | "
            f"{r['counting_s']} | {r['daemon_peak_mb']} | {r['workers_peak_mb']} |"
        )
    if len(results) == 2 and results[0]["steps"]:
        extra = (results[1]["counting_s"] - results[0]["counting_s"]) / results[0]["steps"]
        print(f"\nDask overhead per step (counting time difference / steps): {extra:.3f} s")


if __name__ == "__main__":
    main()
