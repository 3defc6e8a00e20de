"""One party's LKC run on the one-process engine and on the Dask engine (row shards).

The synthetic hospital table of `--rows` rows is written once as a Parquet dataset of
`--files` partitions (`fedanon.synth.write_hospital_parquet`: streamed, one chunk of rows at a
time, cached under --cache). The local engine reads it whole; the Dask engine's daemon reads
only its footers, each worker its own files. Prints: wall time of the whole run (encode +
specializations + the union's input: the released records read batch by batch, as the daemon
reads them to measure and to seal, `party/records.py`), the number of steps, the Dask engine's
overhead per step (its counting time minus the local engine's, per step; and, measured in the
Dask run alone, the daemon's wall time of a step minus the busiest worker's compute in it,
from Dask's task stream), the peak resident memory of the process (the party's daemon, with
the search's own state, the leader's in a federation) and of the worker processes, CPU
seconds of both, and the union's cost per record on one core: sealing `--seal-sample` records
for a ring of three parties, each hop's peel and the leader's open. The two engines run in
separate child processes so that each peak is its own. bench/RESULTS.md has the numbers and
the projection.

    nice .venv/bin/python bench/bench_dask_party.py --rows 2000000 --shards 2 --workers 2
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.engines.records import ReleasedRows
from fedanon.algorithms.tds.engines.sharded import ShardedParty
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.crypto.onion_union import UnionContext, open_records, peel_layer
from fedanon.crypto.parallel import SEQUENTIAL
from fedanon.party.records import LocalRecords, encode_record
from fedanon.party.union import SEAL_PIECE_RECORDS, UnionRole, measured_size
from fedanon.readers.sources import ParquetSource
from fedanon.schema import LKCParams
from fedanon.synth import hospital_taxonomy_path, write_hospital_parquet
from fedanon.taxonomy.loader import load_taxonomy

PARAMS = LKCParams.of(3, 20, "0.2")


def _dataset(rows: int, files: int, cache: Path) -> Path:
    """The table as `files` Parquet partitions (written once, streamed: one chunk at a time)."""
    where = cache / f"hospital-{rows}-{files}"
    if not (where / "done").exists():
        write_hospital_parquet(where, rows, files)
        (where / "done").write_text("ok")
    return where


def _step_overheads(party: ShardedParty, client: Any) -> tuple[Any, list[tuple[float, float]]]:
    """Times every mutating call of `party` (a specialization step, or the start): its wall
    time at the daemon, paired with the task stream's record of the workers' compute, from
    which `_overhead_per_step` takes the critical path."""
    from distributed import get_task_stream

    calls: list[tuple[float, float]] = []
    call = party._call

    def timed(name: str, *args: Any) -> Any:
        began = time.time()
        out = call(name, *args)
        if name in ("start", "specialize"):
            calls.append((began, time.time()))
        return out

    party._call = timed  # type: ignore[method-assign]
    return get_task_stream(client), calls


def _overhead_per_step(stream: list[dict[str, Any]], calls: list[tuple[float, float]]) -> dict:
    """Per step: the daemon's wall time minus the busiest worker's compute inside it (its
    tasks run one at a time: one thread per worker), i.e. what sharding adds to a step
    (scheduling, transfers, packing, the daemon's wait), as the median and the maximum."""
    over = []
    for began, ended in calls:
        busy: dict[str, float] = {}
        for task in stream:
            for part in task["startstops"]:
                if part["action"] == "compute" and began <= part["start"] and part["stop"] <= ended:
                    busy[task["worker"]] = (
                        busy.get(task["worker"], 0.0) + part["stop"] - part["start"]
                    )
        over.append((ended - began) - max(busy.values(), default=0.0))
    if not over:
        return {}
    return {
        "step_wall_and_overhead_s": [
            (round(e - b, 2), round(o, 2)) for (b, e), o in zip(calls, over, strict=True)
        ],
        "step_overhead_median_s": round(float(np.median(over)), 3),
        "step_overhead_max_s": round(max(over), 3),
        "step_wall_median_s": round(float(np.median([e - b for b, e in calls])), 3),
    }


def _peak_mb() -> int:
    """This process's peak resident memory (VmHWM: its own, unlike ru_maxrss, which a
    spawned process inherits from the parent it was forked from)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return 0


def _cpu_s() -> float:
    """CPU seconds of this process so far (user + system)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _union_seconds_per_record(records: LocalRecords, sample: int) -> dict[str, float]:
    """CPU seconds per record, on one core, of each step of the layered union for `sample` of
    the records in a ring of three parties and the leader, no keys prepared ahead: sealing
    (the union's COLLECT at this party), each hop's peel (its layer off, and its shuffle) and
    the leader's open; the opened records must be the sample's."""
    keys = [X25519PrivateKey.generate() for _ in range(4)]
    route = tuple(k.public_key().public_bytes_raw() for k in keys)
    ctx = UnionContext(b"b" * 16, 1, route, measured_size(records.longest))
    role = UnionRole(keys[0], 0, SEQUENTIAL)
    role.route = route
    first = next(records.pieces(min(sample, SEAL_PIECE_RECORDS)))
    held = first
    began = _cpu_s()
    batch = role.seal(LocalRecords(lambda: [_as_batch(held)]), ctx, None)
    costs = {"seal": _cpu_s() - began}
    for hop in range(3):
        began = _cpu_s()
        batch = peel_layer(batch, keys[hop], hop, ctx)
        costs[f"peel{hop}"] = _cpu_s() - began
    began = _cpu_s()
    opened = open_records(batch, keys[3], ctx)
    costs["open"] = _cpu_s() - began
    assert sorted(opened) == sorted(first)
    return {name: seconds / max(1, len(first)) for name, seconds in costs.items()}


def _as_batch(records: list[bytes]) -> ReleasedRows:
    """Already-serialized records as one batch (each record its own row)."""
    return ReleasedRows(records, np.arange(len(records)))


def _run(
    engine: str,
    data: Path,
    shards: int,
    workers: int,
    sample: int,
    release: bool,
    out: multiprocessing.Queue,
) -> None:
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
        # the schema's checks on the first rows (the shards encode and check their own)
        head = next(pq.ParquetFile(source.files[0]).iter_batches(batch_size=100_000))
        schema = copy.deepcopy(build_schema(taxonomy, head.to_pandas(types_mapper=pd.ArrowDtype)))
        del head
        party = ShardedParty(client, schema, source.shards(shards), source.columns)
    opened = time.perf_counter()
    steps: dict = {}
    if client is not None and isinstance(party, ShardedParty):
        stream, calls = _step_overheads(party, client)
        with stream:
            result = LKCEngine(schema, PARAMS).run(party)
        steps = _overhead_per_step(stream.data, calls)
    else:
        result = LKCEngine(schema, PARAMS).run(party)
    searched = time.perf_counter()
    search_cpu = _cpu_s()
    worker_search_cpu = sum(client.run(_cpu_s).values()) if client is not None else 0.0
    expanded, union = 0, {}
    if release:
        records = LocalRecords(lambda: party.released_rows(encode_record))  # count, longest
        expanded = sum(len(piece) for piece in records.pieces(SEAL_PIECE_RECORDS))  # the second
        assert len(records) == expanded == source.n_rows
        union = _union_seconds_per_record(records, sample) if sample else {}
    done = time.perf_counter()
    worker_peak, worker_cpu = 0, 0.0
    if client is not None:
        worker_peak = sum(client.run(_peak_mb).values())
        worker_cpu = sum(client.run(_cpu_s).values())
        party.close()
        client.close()
        if cluster is not None:
            cluster.close()
    out.put(
        {
            "engine": engine,
            "rows": source.n_rows,
            "released": expanded,
            "steps": len(result.specializations),
            "open_s": round(opened - began, 2),
            "search_s": round(searched - opened, 2),
            "records_s": round(done - searched, 2),
            "run_s": round(done - opened, 2),
            "counting_s": round(result.seconds_counting, 2),
            "daemon_cpu_s": round(_cpu_s(), 1),
            "workers_cpu_s": round(worker_cpu, 1),
            "daemon_search_cpu_s": round(search_cpu, 1),
            "workers_search_cpu_s": round(worker_search_cpu, 1),
            "daemon_peak_mb": _peak_mb(),
            "workers_peak_mb": worker_peak,
            "seal_us_per_record": round(union.get("seal", 0.0) * 1e6, 1),
            **{f"{k}_us_per_record": round(v * 1e6, 1) for k, v in union.items() if k != "seal"},
            **steps,
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
    parser.add_argument("--data", help="an existing Parquet dataset (directory) instead")
    parser.add_argument(
        "--release",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also read the union's input (both passes) and time sealing a sample of it",
    )
    parser.add_argument(
        "--seal-sample", type=int, default=20_000, help="records sealed to time the union"
    )
    args = parser.parse_args()
    data = Path(args.data) if args.data else _dataset(args.rows, args.files, Path(args.cache))
    results = []
    context = multiprocessing.get_context("spawn")
    for engine in args.engines.split(","):
        queue = context.Queue()
        child = context.Process(
            target=_run,
            args=(engine, data, args.shards, args.workers, args.seal_sample, args.release, queue),
        )
        child.start()
        results.append(queue.get())
        child.join()
        print(json.dumps(results[-1]), flush=True)
    files = len(ParquetSource(data).files)
    print(
        f"\n{results[0]['rows']:,} rows in {files} Parquet files, {args.shards} shards, "
        f"{args.workers} worker processes\n"
    )
    print(
        "| engine | steps | open s | search s | records s | counting s | daemon CPU s "
        "(search) | workers CPU s (search) | daemon peak MB | workers' peaks MB | "
        "seal us/record |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['engine']} | {r['steps']} | {r['open_s']} | {r['search_s']} | "
            f"{r['records_s']} | {r['counting_s']} | {r['daemon_cpu_s']} "
            f"({r['daemon_search_cpu_s']}) | {r['workers_cpu_s']} "
            f"({r['workers_search_cpu_s']}) | {r['daemon_peak_mb']} | "
            f"{r['workers_peak_mb']} | {r['seal_us_per_record']} |"
        )
    for r in results:
        if "step_overhead_median_s" in r:
            print(
                f"\n{r['engine']}: per step, wall {r['step_wall_median_s']} s (median), of which "
                f"sharding adds {r['step_overhead_median_s']} s (median; "
                f"max {r['step_overhead_max_s']} s)"
            )
        if r.get("open_us_per_record"):
            hops = [r[f"peel{h}_us_per_record"] for h in range(3)]
            print(
                f"{r['engine']}: union us/record on one core: seal {r['seal_us_per_record']}, "
                f"peel {hops}, open {r['open_us_per_record']}"
            )
    if len(results) == 2 and results[0]["steps"]:
        extra = (results[1]["counting_s"] - results[0]["counting_s"]) / results[0]["steps"]
        print(f"\nDask overhead per step (counting time difference / steps): {extra:.3f} s")


if __name__ == "__main__":
    main()
