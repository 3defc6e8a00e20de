"""LKC paper, Figures 6(b), 7 and 8 on Adult, printed as Markdown tables.

    python bench/reproduce_lkc_figs.py --figs 6b,7a,8 > /tmp/lkc_figs.md

* Fig. 6(b) / 7(b): CE and DR at K = 100, L = 2, 4, 6, C swept over 5 % .. 30 %.
* Fig. 7(a): DR at C = 20 %, L = 2, 4, 6 and 13 (all QIDs: traditional K-anonymity, which the
  paper says L = 6 equals on Adult), K = 20 .. 100, with the discernibility score (the
  paper's Case 2, general analysis).
* Fig. 8: L = 4, C = 20 %, K = 20 .. 100: the naive "generalize-then-integrate" baseline (the
  45,222 rows split equally among three parties, each party anonymizes its own rows to LKC alone,
  the releases are stacked back in the original row order) against the distributed method,
  whose release equals the centralized one (docs/distributed.md), so the centralized release
  stands for it here.

Setting as bench/reproduce_lkc_adult.py: adult_all.csv, the authors' taxonomy file, dynamic
numerical splits, infogain score unless stated, first 30,162 rows train the C4.5-style tree.
Every release (each naive party's and the stacked one) is verified by the independent checker.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema
from fedanon.algorithms.tds.sweep import numeric_view, sensitive_map, sweep
from fedanon.errors import InfeasibleError
from fedanon.models.lkc import check_lkc
from fedanon.readers.datadir import data_dir
from fedanon.readers.table_io import read_table
from fedanon.schema import LKCParams, Schema
from fedanon.taxonomy.loader import load_taxonomy
from fedanon.utility.evaluation import baseline_errors, evaluate_release

TRAIN_ROWS = 30_162
KS = [20, 40, 60, 80, 100]
LS = [2, 4, 6]
CS = ["0.05", "0.1", "0.15", "0.2", "0.25", "0.3"]


def make_schema(table: pd.DataFrame, dynamic: bool = True) -> Schema:
    """A fresh schema (one per release): numerical trees grown from `table` by infogain when
    `dynamic`, else the taxonomy file's interval trees."""
    taxonomy = load_taxonomy(data_dir() / "adult" / "lkc_paper_taxonomy.hchy")
    numeric = [a for a in taxonomy.qids or [] if taxonomy.taxonomies[a].kind == "numeric"]
    return build_schema(taxonomy, table, dynamic=numeric if dynamic else [])


def party_of_row(n_rows: int, parties: int, split: str) -> np.ndarray:
    """Which party holds each row: round-robin (every party holds training and test rows in the
    same proportion) or contiguous equal blocks (rows in file order)."""
    if split == "round-robin":
        return np.arange(n_rows) % parties
    return np.minimum(np.arange(n_rows) * parties // n_rows, parties - 1)


def naive_release(
    table: pd.DataFrame,
    L: int,
    K: int,
    C: str,
    parties: int,
    split: str,
    score: str,
    dynamic: bool,
) -> tuple[pd.DataFrame, bool]:
    """Each party generalizes its own rows to LKC alone; the releases are integrated.

    Returns the integrated table in the original row order and whether every party's release
    passed the checker.
    """
    owner = party_of_row(len(table), parties, split)
    parts = []
    ok = True
    for party in range(parties):
        own = table[owner == party]
        schema = make_schema(own, dynamic)
        released = anonymize_lkc(own, schema, LKCParams.of(L, K, C), score).table
        released.index = own.index
        ok = ok and check_lkc(released, schema.qids, sensitive_map(schema), L, K, C).ok
        parts.append(released)
    return pd.concat(parts).loc[table.index], ok


def fig8(table: pd.DataFrame, split: str, score: str, dynamic: bool) -> None:
    schema = make_schema(table)
    assert schema.class_column is not None
    numeric = [t.attribute for t in schema.taxonomies if t.kind == "numeric"]
    raw = numeric_view(table, numeric)
    raw_train, raw_test = raw.iloc[:TRAIN_ROWS], raw.iloc[TRAIN_ROWS:]
    base = baseline_errors(raw_train, raw_test, schema.class_column, schema.qids, numeric)
    print(
        f"\nFig. 8: L = 4, C = 20 %, 3 parties ({split} split), {score} score, "
        f"{'dynamic' if dynamic else 'given'} numerical trees\n"
    )
    print(
        "| K | distributed CE % | naive CE % | distributed CE-BE | naive CE-BE | naive UE-CE "
        "| distributed DR | naive DR | naive checker | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for K in KS:
        began = time.perf_counter()
        params = LKCParams.of(4, K, "0.2")
        central = anonymize_lkc(table, make_schema(table, dynamic), params, score).table
        naive, ok = naive_release(table, 4, K, "0.2", 3, split, score, dynamic)
        merged_ok = check_lkc(naive, schema.qids, sensitive_map(schema), 4, K, "0.2").ok
        scores = [
            evaluate_release(
                raw_train,
                raw_test,
                released.iloc[:TRAIN_ROWS],
                released.iloc[TRAIN_ROWS:],
                schema.class_column,
                schema.qids,
                numeric,
                baseline=base,
            )
            for released in (central, naive)
        ]
        d, n = scores
        print(
            f"| {K} | {d['CE']:.2f} | {n['CE']:.2f} | {d['CE'] - d['BE']:.2f} | "
            f"{n['CE'] - n['BE']:.2f} | {n['UE'] - n['CE']:.2f} | {d['DR']:.4f} | "
            f"{n['DR']:.4f} | {'ok' if ok and merged_ok else 'FAIL'} | "
            f"{time.perf_counter() - began:.0f} |",
            flush=True,
        )
    print(f"\nBE = {base['BE']:.2f} %, UE = {base['UE']:.2f} %")


def grid(
    table: pd.DataFrame, Ks: list[int], Cs: list[str], score: str, title: str, Ls: list[int]
) -> None:
    print(f"\n{title}\n")
    print("| score | L | K | C | CE % | CE-BE | DR | checker |")
    print("|---|---|---|---|---|---|---|---|")
    for C in Cs:
        try:
            _sweep_rows(table, Ls, Ks, C, score)
        except InfeasibleError as error:
            grid_cell = f"{', '.join(map(str, Ls))} | {', '.join(map(str, Ks))}"
            print(f"| {score} | {grid_cell} | {C} | {error} ||||")


def _sweep_rows(table: pd.DataFrame, Ls: list[int], Ks: list[int], C: str, score: str) -> None:
    """One Markdown row per (L, K) of the sweep at C."""

    def show(r: dict[str, Any]) -> None:
        print(
            f"| {score} | {r['L']} | {r['K']} | {r['C']} | {r['CE']:.2f} | "
            f"{r['CE'] - r['BE']:.2f} | {r['DR']:.4f} | {'ok' if r['checker_ok'] else 'FAIL'} |",
            flush=True,
        )

    sweep(table, partial(make_schema, table), Ls, Ks, C, TRAIN_ROWS, score=score, on_row=show)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figs", default="6b,7a,8", help="comma list of 6b, 7a, 8")
    parser.add_argument("--split", choices=["round-robin", "blocks"], default="round-robin")
    parser.add_argument("--fig8-scores", default="infogain,discernibility")
    parser.add_argument("--fig8-trees", default="dynamic,given", help="numerical trees")
    args = parser.parse_args()
    table = read_table(data_dir() / "adult" / "adult_all.csv")
    figs = set(args.figs.split(","))
    if "6b" in figs:
        grid(table, [100], CS, "infogain", "Fig. 6(b) and 7(b): K = 100, C swept", LS)
    if "7a" in figs:
        # L = 13 (every QID) is traditional K-anonymity, which the paper compares L = 6 with.
        title = "Fig. 7(a): C = 20 %, discernibility score; L = 13 is K-anonymity"
        grid(table, KS, ["0.2"], "discernibility", title, [*LS, 13])
    if "8" in figs:
        for score in args.fig8_scores.split(","):
            for trees in args.fig8_trees.split(","):
                fig8(table, args.split, score, trees == "dynamic")
    return 0


if __name__ == "__main__":
    sys.exit(main())
