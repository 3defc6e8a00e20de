"""Where a Dask party's shard spends its memory, per row: one shard, in this process.

Loads one shard of the synthetic hospital table's Parquet dataset (`bench_dask_party.py`
writes it) as a Dask worker does (``sharded._open_shard``), runs the LKC search on it, then
reads its release as the union does (every part, twice). Prints, per phase, this process's
peak resident memory above what it held before the phase (VmHWM, reset per phase through
/proc/self/clear_refs) and what the shard's state holds afterwards, attribute by attribute
(numpy/Arrow buffers and frames; Python objects by ``sys.getsizeof``), all in bytes per row.
The search phase's peak includes the search's own statistics of every partition (reported
apart: a worker does not hold them; the daemon, or the leader in a federation, does).

    nice .venv/bin/python bench/bench_shard_memory.py --rows 2000000 --files 2 --shard-files 1
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.engines import sharded
from fedanon.party.records import LocalRecords, encode_record
from fedanon.readers.sources import FilesShard, ParquetSource
from fedanon.synth import hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy

sys.path.insert(0, str(Path(__file__).parent))
from bench_dask_party import PARAMS, _dataset


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> int:
    """Hand the free heap back (else a phase reuses what the last one freed, unseen), then
    reset VmHWM to the current RSS (Linux), which is returned."""
    pa.default_memory_pool().release_unused()
    ctypes.CDLL(None).malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")
    return _status("VmRSS")


def _nbytes(value: Any, seen: set[int]) -> int:
    """Bytes a value holds in arrays and frames (each buffer once)."""
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        base = value if value.base is None else value.base
        if base is not value and id(base) in seen:
            return 0
        seen.add(id(base))
        return int(
            value.nbytes
            if value.dtype != object
            else value.size * 8 + sum(sys.getsizeof(v) for v in value.reshape(-1).tolist())
        )
    if isinstance(value, pd.DataFrame):
        return int(value.memory_usage(deep=True, index=True).sum())
    if isinstance(value, pd.Series):
        return int(value.memory_usage(deep=True, index=True))
    if isinstance(value, pa.Array | pa.ChunkedArray | pa.Table):
        return int(value.nbytes)
    if isinstance(value, list | tuple):
        return sys.getsizeof(value) + sum(_nbytes(v, seen) for v in value)
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(_nbytes(v, seen) for v in value.values())
    if hasattr(value, "nbytes") and isinstance(value.nbytes, int):
        return int(value.nbytes)
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return sum(_nbytes(v, seen) for v in vars(value).values())
    if isinstance(value, bytes | str):
        return sys.getsizeof(value)
    return 0


def _components(party: Any, rows: int) -> dict[str, float]:
    seen: set[int] = {id(party.schema)}
    return {
        name: round(_nbytes(value, seen) / rows, 1)
        for name, value in vars(party).items()
        if name != "schema"
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=2)
    parser.add_argument("--shard-files", type=int, default=1, help="files in the shard")
    parser.add_argument("--cache", default="/tmp/fedanon-bench-dask")
    args = parser.parse_args()
    source = ParquetSource(_dataset(args.rows, args.files, Path(args.cache)))
    taxonomy = load_taxonomy(hospital_taxonomy_path(), data_columns=source.columns)
    shard = FilesShard(tuple(source.files[: args.shard_files]))
    head = next(pq.ParquetFile(source.files[0]).iter_batches(batch_size=100_000))
    schema = copy.deepcopy(build_schema(taxonomy, head.to_pandas(types_mapper=pd.ArrowDtype)))
    del head
    report: dict[str, Any] = {}
    before = _reset_peak()
    began = time.process_time()
    rows = sharded._open_shard("bench", shard, schema, source.columns)
    party = sharded._SHARDS["bench"].party
    report["open"] = {
        "cpu_s": round(time.process_time() - began, 2),
        "peak_B_per_row": round((_status("VmHWM") - before) / rows, 1),
        "held_B_per_row": round((_status("VmRSS") - before) / rows, 1),
    }
    report["state_after_open"] = _components(party, rows)
    before = _reset_peak()
    began = time.process_time()
    engine = LKCEngine(party.schema, PARAMS)
    result = engine.run(party)
    report["search"] = {
        "steps": len(result.specializations),
        "partitions": int(party.partitions.size),
        "cpu_s": round(time.process_time() - began, 2),
        # the search's own statistics (the leader's in a federation, the daemon's here)
        "search_state_B_per_row": round(sum(b.nbytes for b in engine.stats.blocks) / rows, 1),
        "peak_B_per_row": round((_status("VmHWM") - before) / rows, 1),
        "held_B_per_row": round((_status("VmRSS") - before) / rows, 1),
    }
    report["state_after_search"] = _components(party, rows)
    before = _reset_peak()
    began = time.process_time()
    records = LocalRecords(lambda: party.released_rows(encode_record))
    expanded = sum(len(piece) for piece in records.pieces(1 << 18))
    report["release"] = {
        "records": expanded,
        "cpu_s": round(time.process_time() - began, 2),
        "peak_B_per_row": round((_status("VmHWM") - before) / rows, 1),
        "held_B_per_row": round((_status("VmRSS") - before) / rows, 1),
    }
    report["state_after_release"] = _components(party, rows)
    print(f"one shard of {rows:,} rows ({args.shard_files} of {args.files} files)")
    for phase, values in report.items():
        print(f"{phase}: {values}")


if __name__ == "__main__":
    main()
