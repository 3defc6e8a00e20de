"""Print the (alpha,k) Adult reproduction as Markdown tables and draw its chart.

    .venv/bin/python bench/reproduce_alphak_adult.py --chart docs/alpha-k-adult.png

Average relative error of 1000 COUNT queries on Alpha(Lossy), Anatomy, Alpha (local recoding)
and global recoding, at the paper's default (qd = 4, s = 0.05, d = 8, n = 45,222, k = 2,
alpha = 0.33) and along each axis the paper varies (qd, s, d, n), plus a k x alpha grid
(k up to 7: with l = max(k, ceil(1/alpha)) = 10 Anatomy is infeasible on Adult, whose most
frequent occupation holds 13.3% > 1/10 of the rows).
"""

from __future__ import annotations

import argparse
import sys
import time

from fedanon.algorithms.alphak.query_report import plot_query_errors
from fedanon.experiments.alphak.reproduce import ADULT_QIDS, SERIES, errors_at, load_adult

QD_VALUES = (1, 2, 3, 4, 5, 6)
S_VALUES = (0.01, 0.03, 0.05, 0.07, 0.1)
D_VALUES = (4, 5, 6, 7, 8)
N_VALUES = (10_000, 20_000, 30_000, 45_222)
GRID = [(k, alpha) for k in (2, 5, 7) for alpha in ("0.25", "0.33", "0.5")]


def _row(label: str, point: dict, names: list[str]) -> str:
    errors = [point[n]["average_relative_error"] for n in names]
    ordered = errors[0] < errors[1] < errors[2]
    cells = " | ".join(f"{e:.4f}" for e in errors)
    return f"| {label} | {cells} | {'yes' if ordered else '**no**'} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chart", help="PNG of error against qd and s")
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args()
    data = load_adult()
    names = list(SERIES)
    header = "| setting | " + " | ".join(names) + " | Lossy < Anatomy < Alpha |"
    rule = "|---" * (len(names) + 2) + "|"
    began = time.perf_counter()

    main_report = errors_at(data, queries=args.queries, qd_values=QD_VALUES, s_values=S_VALUES)
    if args.chart:
        plot_query_errors(main_report, args.chart)
    print(f"Independent check of every release: {main_report['checks']}\n")
    print(header, rule, sep="\n")
    print(_row("default (qd 4, s 0.05)", main_report["default"], names))
    for point in main_report["by_qd"]:
        print(_row(f"qd = {point['qd']}", point, names))
    for point in main_report["by_s"]:
        print(_row(f"s = {point['s']}", point, names))
    for d in D_VALUES:
        report = errors_at(data, qids=ADULT_QIDS[:d], queries=args.queries)
        assert all(report["checks"].values()), report["checks"]
        print(_row(f"d = {d}", report["default"], names), flush=True)
    for n in N_VALUES:
        report = errors_at(data, rows=n, queries=args.queries)
        assert all(report["checks"].values()), report["checks"]
        print(_row(f"n = {n}", report["default"], names), flush=True)
    for k, alpha in GRID:
        report = errors_at(data, k=k, alpha=alpha, queries=args.queries)
        assert all(report["checks"].values()), report["checks"]
        print(_row(f"k = {k}, alpha = {alpha}", report["default"], names), flush=True)
    print(f"\n{time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
