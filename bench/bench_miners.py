"""Which frequent-itemset library should fedanon's miner wrap? Time and cross-check the candidates.

Every candidate mines all frequent itemsets of Retail and BMS-WebView-1 at the thesis's
thresholds (sigma = 0.1%); the script prints seconds and peak memory per candidate and whether
its itemsets and counts equal those of every other candidate (correctness by agreement).
The candidates are imported lazily and only if installed:

    .venv/bin/pip install pyfim mlxtend efficient-apriori
    FEDANON_DATA_DIR=/path/to/data .venv/bin/python bench/bench_miners.py
"""

from __future__ import annotations

import argparse
import math
import resource
import time
import tracemalloc
from collections.abc import Callable

from fedanon.readers.datadir import data_dir
from fedanon.utility.transactions import Transactions

Itemsets = dict[frozenset[int], int]


def _min_count(n: int, min_support: float) -> int:
    return max(1, math.ceil(min_support * n - 1e-9))


def mine_pyfim(algo: str) -> Callable[[Transactions, float], Itemsets]:
    def run(tx: Transactions, min_support: float) -> Itemsets:
        import fim

        miner = getattr(fim, algo)
        found = miner(tx.to_lists(), target="s", supp=-_min_count(len(tx), min_support), report="a")
        return {frozenset(items): count for items, count in found}

    return run


def mine_mlxtend(tx: Transactions, min_support: float) -> Itemsets:
    import numpy as np
    import pandas as pd
    from mlxtend.frequent_patterns import fpgrowth
    from scipy import sparse

    distinct = tx.distinct_items()
    columns = np.searchsorted(distinct, tx.items)
    matrix = sparse.csr_matrix(
        (np.ones(len(tx.items), dtype=bool), columns, tx.indptr), shape=(len(tx), len(distinct))
    )
    # pandas-stubs types the class-level sparse accessor as `...`; pandas documents this call.
    frame = pd.DataFrame.sparse.from_spmatrix(  # type: ignore[attr-defined]
        matrix, columns=[str(i) for i in distinct.tolist()]
    )
    threshold = _min_count(len(tx), min_support) / len(tx)
    found = fpgrowth(frame, min_support=threshold - 1e-12, use_colnames=True)
    return {
        frozenset(int(i) for i in items): round(support * len(tx))
        for items, support in zip(found["itemsets"], found["support"], strict=True)
    }


def mine_efficient_apriori(tx: Transactions, min_support: float) -> Itemsets:
    from efficient_apriori import itemsets_from_transactions

    threshold = _min_count(len(tx), min_support) / len(tx)
    found, _ = itemsets_from_transactions(
        [tuple(row) for row in tx.to_lists()], min_support=threshold - 1e-12
    )
    return {frozenset(items): count for level in found.values() for items, count in level.items()}


CANDIDATES: dict[str, Callable[[Transactions, float], Itemsets]] = {
    "pyfim fpgrowth": mine_pyfim("fpgrowth"),
    "pyfim eclat": mine_pyfim("eclat"),
    "pyfim apriori": mine_pyfim("apriori"),
    "mlxtend fpgrowth": mine_mlxtend,
    "efficient-apriori": mine_efficient_apriori,
}

DATASETS = {"Retail": ("fimi", "retail.dat"), "BMS-WebView-1": ("fimi", "BMS-WebView-1.dat")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--support", type=float, default=0.001)
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell; the median is shown")
    args = parser.parse_args()
    print("| data | candidate | itemsets | seconds (median) | peak Python MiB | agrees |")
    print("|---|---|---|---|---|---|")
    for name, parts in DATASETS.items():
        tx = Transactions.read_fimi(data_dir().joinpath(*parts))
        results: dict[str, Itemsets] = {}
        for candidate, mine in CANDIDATES.items():
            try:
                times = []
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    found = mine(tx, args.support)
                    times.append(time.perf_counter() - start)
                tracemalloc.start()
                mine(tx, args.support)
                peak = tracemalloc.get_traced_memory()[1] / 2**20
                tracemalloc.stop()
            except ImportError:
                print(f"| {name} | {candidate} | not installed | | | |")
                continue
            results[candidate] = found
            reference = next(iter(results.values()))
            agrees = "yes" if found == reference else "NO"
            print(
                f"| {name} | {candidate} | {len(found)} | {sorted(times)[len(times) // 2]:.2f} "
                f"| {peak:.0f} | {agrees} |",
                flush=True,
            )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nprocess peak RSS {rss:.0f} MiB")


if __name__ == "__main__":
    main()
