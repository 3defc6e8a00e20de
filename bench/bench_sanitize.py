"""Sanitization speed: each algorithm on Retail and BMS-WebView-1 with 100 random sensitive rules,
and how the time grows with the number of transactions (Retail replicated up to ~1M).

The 100 rules are drawn (seeded) from the rules of each log at sigma = 0.1%, phi = 60%. Times are
CPU seconds of this process (`time.process_time`, the machine is shared) for `sanitize()` on a
log already in memory; DSA's time includes mining the itemset graph it sanitizes. Peak memory is
tracemalloc's peak of the same call (Python and numpy allocations). Reading and writing the FIMI
files is timed separately. The thesis timed Kosarak (990K transactions, not available here):
IGA 49.4 s, SWA 279 s with 100 rules on a 2005 AMD 3200.

    FEDANON_DATA_DIR=/path/to/shared/data .venv/bin/python bench/bench_sanitize.py
"""

from __future__ import annotations

import argparse
import io
import random
import time
import tracemalloc
from typing import Any

import numpy as np
from machine_info import describe

from fedanon.algorithms.sanitization.api import ALGORITHMS, sanitize
from fedanon.algorithms.sanitization.rules import SensitiveRule
from fedanon.readers.datadir import data_dir
from fedanon.utility.miner import mine_rules
from fedanon.utility.transactions import Transactions

SIGMA, PHI, WINDOW, SEED = 0.001, 0.60, 50_000, 7
DATASETS = {"Retail": "retail.dat", "BMS-WebView-1": "BMS-WebView-1.dat"}


def random_rules(tx: Transactions, count: int) -> list[SensitiveRule]:
    """`count` distinct rules of the log, drawn with a fixed seed."""
    mined = mine_rules(tx, SIGMA, PHI)
    chosen = random.Random(SEED).sample(mined, min(count, len(mined)))
    return [SensitiveRule(r.antecedent, r.consequent) for r in chosen]


def timed(tx: Transactions, rules: list[SensitiveRule], algorithm: str) -> tuple[float, float]:
    """CPU seconds and peak MiB of one sanitize() call."""
    kwargs: dict[str, Any] = {"window": WINDOW} if algorithm == "swa" else {}
    if algorithm == "dsa":
        kwargs = {"min_support": SIGMA}
    tracemalloc.start()
    start = time.process_time()
    sanitize(tx, rules=rules, algorithm=algorithm, seed=SEED, **kwargs)
    seconds = time.process_time() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak


def replicate(tx: Transactions, times: int) -> Transactions:
    """The log concatenated `times` times (same relative supports, times as many transactions)."""
    lengths = np.tile(tx.lengths(), times)
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    return Transactions(indptr, np.tile(tx.items, times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=100)
    parser.add_argument("--factors", default="1,2,4,8,12", help="Retail replication factors")
    args = parser.parse_args()
    print(describe(["numpy", "pyfim"]))
    print(f"\n## {args.rules} random sensitive rules, psi = 0\n")
    print("| data | transactions | algorithm | CPU s | peak MiB |")
    print("|---|---|---|---|---|")
    for name, file in DATASETS.items():
        tx = Transactions.read_fimi(data_dir() / "fimi" / file)
        rules = random_rules(tx, args.rules)
        for algorithm in ALGORITHMS:
            seconds, peak = timed(tx, rules, algorithm)
            print(
                f"| {name} | {len(tx):,} | {algorithm} | {seconds:.2f} | {peak:.0f} |", flush=True
            )

    retail = Transactions.read_fimi(data_dir() / "fimi" / "retail.dat")
    rules = random_rules(retail, args.rules)
    factors = [int(f) for f in args.factors.split(",")]
    print(f"\n## Growth with the number of transactions (Retail replicated, {args.rules} rules)\n")
    print(
        "| transactions | " + " | ".join(f"{a} CPU s" for a in ALGORITHMS) + " | read s | write s |"
    )
    print("|---" * (len(ALGORITHMS) + 3) + "|")
    for factor in factors:
        big = replicate(retail, factor)
        cells = [f"{timed(big, rules, algorithm)[0]:.2f}" for algorithm in ALGORITHMS]
        text = big.to_fimi_bytes()
        start = time.process_time()
        Transactions.parse_fimi(text)
        read = time.process_time() - start
        start = time.process_time()
        io.BytesIO().write(big.to_fimi_bytes())
        write = time.process_time() - start
        print(f"| {len(big):,} | " + " | ".join(cells) + f" | {read:.2f} | {write:.2f} |",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
