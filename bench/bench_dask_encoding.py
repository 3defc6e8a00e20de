"""A Dask party's session start: its shards' encodings kept on the workers, or loaded anew (#28).

The synthetic hospital table of ``--rows`` rows, held as Arrow text (``ArrowSource``, what a
daemon reads from its CSV), served by one ``DaskEngine`` over a local cluster of ``--workers``
processes (Dask's TLS, as a daemon starts it) and ``--shards`` shards. What a session pays
before its first vector: ``engine.open`` + ``start``. Two sides, alternated A B A B in this one
process after a warm-up run:

* ``kept``: the run restarts every shard from the encoding its worker kept (session 12);
* ``anew``: the kept encodings dropped first, so each shard's rows are sent to its worker and
  encoded again (what every session did before).

Both sides' root statistics are checked equal. Prints the medians over ``--repeat`` of the wall
and CPU seconds (this process and its worker processes: ``measure.own_cpu``) and kept / anew.

    nice -n 5 .venv/bin/python bench/bench_dask_encoding.py --rows 200000
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa
from measure import own_cpu

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.engines import EngineSettings
from fedanon.algorithms.tds.engines.sharded import DaskEngine
from fedanon.readers.sources import ArrowSource
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    frame = generate_hospital(args.rows, seed=12).drop(columns=["patient_id"]).astype(str)
    source = ArrowSource(pa.Table.from_pandas(frame, preserve_index=False))
    taxonomy = load_taxonomy(hospital_taxonomy_path(), data_columns=list(frame.columns))
    columns = list(frame.columns)
    engine = DaskEngine(EngineSettings("dask", shards=args.shards, workers=args.workers))
    try:

        def session(anew: bool) -> np.ndarray:
            if anew:
                engine._forget()
            schema = build_schema(taxonomy, frame)  # a session builds its schema again
            return engine.open(schema, source, columns).start().copy()

        reference = session(anew=True)  # warm-up: the cluster started, the encodings kept
        times: dict[str, tuple[list[float], list[float]]] = {"kept": ([], []), "anew": ([], [])}
        for _ in range(args.repeat):
            for name in ("kept", "anew"):
                cpu, wall = own_cpu(), time.perf_counter()
                root = session(anew=name == "anew")
                times[name][0].append(time.perf_counter() - wall)
                times[name][1].append(own_cpu() - cpu)
                assert np.array_equal(root, reference)
    finally:
        engine.close()
    kw, kc = (statistics.median(x) for x in times["kept"])
    aw, ac = (statistics.median(x) for x in times["anew"])
    print(f"{args.rows:,} rows, {args.shards} shards, {args.workers} worker processes")
    print("side | wall s | CPU s")
    print(f"anew | {aw:.3f} | {ac:.3f}")
    print(f"kept | {kw:.3f} | {kc:.3f}")
    print(f"kept / anew | {kw / aw:.2f} | {kc / ac:.2f}")


if __name__ == "__main__":
    main()
