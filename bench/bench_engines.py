"""Which engine counts a party's records: numpy bincount per shard, pandas or Dask group-bys.

The counting step of a party (fedanon/algorithms/tds/local_party.py) is a histogram of one
integer key per record: ``slot * stride + partition * P + profile`` (the child a record falls in
on one attribute, its partition, its class/sensitive profile). This script builds such keys
for a few million synthetic records and counts them the three ways, one core each, then runs
the same count on a local Dask cluster with the keys in shards (the daemon's overhead per step
is what that adds). It prints a table; docs/engines.md records the decision.

    nice .venv/bin/python bench/bench_engines.py --rows 3000000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import pandas as pd


def _keys(rows: int, partitions: int, seed: int = 1) -> tuple[np.ndarray, int]:
    """Keys as a party builds them for one attribute with 8 children and 4 profiles."""
    rng = np.random.default_rng(seed)
    profiles, width = 4, 8
    stride = partitions * profiles
    cell = rng.integers(0, partitions, rows) * profiles + rng.integers(0, profiles, rows)
    slot = rng.integers(0, width + 1, rows)
    return slot * stride + cell, (width + 1) * stride


def _best(fn: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--partitions", type=int, default=20_000)
    parser.add_argument("--shards", type=int, default=2)
    args = parser.parse_args()
    keys, bins = _keys(args.rows, args.partitions)
    frame = pd.DataFrame({"key": keys})
    expected = np.bincount(keys, minlength=bins)

    def pandas_groupby() -> np.ndarray:
        counts = frame.groupby("key", sort=False).size()
        out = np.zeros(bins, np.int64)
        out[counts.index.to_numpy()] = counts.to_numpy()
        return out

    def pandas_value_counts() -> np.ndarray:
        counts = frame["key"].value_counts(sort=False)
        out = np.zeros(bins, np.int64)
        out[counts.index.to_numpy()] = counts.to_numpy()
        return out

    assert (pandas_groupby() == expected).all() and (pandas_value_counts() == expected).all()
    rows = [
        ("numpy bincount (1 core)", _best(lambda: np.bincount(keys, minlength=bins))),
        ("pandas groupby().size() (1 core)", _best(pandas_groupby)),
        ("pandas value_counts (1 core)", _best(pandas_value_counts)),
    ]

    import dask.dataframe as dd
    from distributed import Client

    from fedanon.algorithms.tds.engines.sharded import loopback_cluster

    with (
        loopback_cluster(
            n_workers=args.shards,
            threads_per_worker=1,
            processes=True,
        ) as cluster,
        Client(cluster) as client,
    ):
        ddf = dd.from_pandas(frame, npartitions=args.shards).persist()

        def dask_groupby() -> np.ndarray:
            counts = ddf.groupby("key").size().compute()
            out = np.zeros(bins, np.int64)
            out[counts.index.to_numpy()] = counts.to_numpy()
            return out

        assert (dask_groupby() == expected).all()
        rows.append((f"Dask DataFrame groupby ({args.shards} workers)", _best(dask_groupby)))
        shards = client.scatter(list(np.array_split(keys, args.shards)))

        def dask_bincount() -> np.ndarray:
            parts = [client.submit(np.bincount, s, minlength=bins, pure=False) for s in shards]
            return client.submit(lambda *p: sum(p), *parts, pure=False).result()

        assert (dask_bincount() == expected).all()
        rows.append(
            (f"Dask: bincount per shard, summed ({args.shards} workers)", _best(dask_bincount))
        )
        tiny = client.scatter(list(np.array_split(keys[:1000] % 16, args.shards)))

        def dask_round_trip() -> np.ndarray:
            parts = [client.submit(np.bincount, s, minlength=16, pure=False) for s in tiny]
            return client.submit(lambda *p: sum(p), *parts, pure=False).result()

        dask_round_trip()
        rows.append(("Dask round trip, empty work (overhead/step)", _best(dask_round_trip, 10)))

    base = rows[0][1]
    print(f"\n{args.rows:,} keys over {bins:,} bins (best of 3)\n")
    print("| method | seconds | x numpy bincount |")
    print("|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.4f} | {seconds / base:.1f} |")


if __name__ == "__main__":
    main()
