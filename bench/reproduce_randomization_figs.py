"""Yang and Qiao 2010, section 7 (Figs. 6-8) on Adult, printed as Markdown tables.

    python bench/reproduce_randomization_figs.py --figs 6a,6b,7,8a,8b [--queries 1000]

The paper's setting (7.1): Adult's 30,162 training rows without missing values, QID =
education, race, sex, workclass, marital-status, age, relationship, native-country, salary;
sensitive = occupation. RA = Algorithm 1 with uniform p (Pa = 34, the paper's figure).

* Fig. 6(a): average relative error of 1000 COUNT queries per number j = 1..8 of QIDs per query
  (plus the sensitive attribute, each predicate a random number of random values of its
  domain), on RA, entropy l-diversity (Mondrian, estimate (12)) and permutation (estimate (13)),
  l = 10. Fig. 6(b): j = 5, l = 10, 8, 5.
* Fig. 7: recovery of the quasi-sensitive associations (Apriori at support 8 %, confidence 15 %)
  from RA and from the permuted data at l = 5, 8, 10.
* Fig. 8(a): enhanced RA, k = 1, 3, 5, 7, 9: associations recovered and artificial ones.
  Fig. 8(b): k = 5, recovery by association length (length 1 = the frequent items).

A "quasi-sensitive association" is read as a frequent itemset (support 8 %) over the QIDs and
occupation that holds an occupation value, and a quasi-sensitive rule as a rule (confidence 15 %)
QID values => occupation value; both are reported. RA numbers are the mean over --seeds
releases. Baselines: fedanon.algorithms.randomization.baselines (docs/randomization.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fedanon.algorithms.alphak.anatomy import anatomy_groups
from fedanon.algorithms.alphak.params import AlphaK
from fedanon.algorithms.randomization.adult import ADULT_QIDS
from fedanon.algorithms.randomization.api import anonymize_randomize
from fedanon.algorithms.randomization.baselines import (
    entropy_l_diverse_groups,
    estimate_groups,
    permuted,
)
from fedanon.algorithms.randomization.coding import observed_domain
from fedanon.algorithms.randomization.rules import MIN_CONFIDENCE, MIN_SUPPORT, as_transactions
from fedanon.errors import InfeasibleError
from fedanon.readers.datadir import data_dir
from fedanon.readers.table_io import read_table
from fedanon.utility.miner import association_rules, frequent_itemsets
from fedanon.utility.queries import QueryWorkload, relative_error

QIDS = ADULT_QIDS
SENSITIVE = "occupation"
COLUMNS = [*QIDS, SENSITIVE]
ENHANCED_KS = (1, 3, 5, 7, 9)


class Associations:
    """The quasi-sensitive itemsets and rules of a table, mined over the QIDs and occupation."""

    def __init__(self, table: pd.DataFrame, domains: Sequence[Sequence[str]]) -> None:
        tx = as_transactions(table, COLUMNS, domains)
        first_sensitive = sum(len(d) for d in domains[:-1])
        itemsets = frequent_itemsets(tx, MIN_SUPPORT)
        self.itemsets = {i for i in itemsets if max(i) >= first_sensitive}
        self.rules = {
            r.key
            for r in association_rules(itemsets, len(tx), MIN_CONFIDENCE)
            if min(r.consequent) >= first_sensitive
        }


def recovery(base: set, found: set) -> tuple[float, int]:
    """|base n found| / |base| and the number of artificial (found, not in base) associations."""
    return len(base & found) / len(base), len(found - base)


def ra_release(table: pd.DataFrame, seed: int, **kwargs: object) -> pd.DataFrame:
    return anonymize_randomize(table, qids=QIDS, seed=seed, **kwargs).table  # type: ignore[arg-type]


def anatomy(adult: pd.DataFrame, ell: int, seed: int = 0) -> np.ndarray | None:
    """Xiao and Tao's l-diverse buckets, or None where a value is too frequent (l >= 8 here)."""
    codes, values = pd.factorize(adult[SENSITIVE])
    try:
        return anatomy_groups(codes, len(values), AlphaK.of(Fraction(1, ell), ell), seed)
    except InfeasibleError:
        return None


def lossy_join(workload: QueryWorkload, adult: pd.DataFrame, g: np.ndarray) -> np.ndarray:
    """Estimate (13) on the permutation release of grouping g (QID table + sensitive table)."""
    nss = adult[QIDS].assign(ClassID=g)
    ss = pd.DataFrame({"ClassID": g, SENSITIVE: adult[SENSITIVE].to_numpy()})
    return workload.estimate_lossy_join(nss, ss)


def fig6(
    adult: pd.DataFrame, js: list[int], ells: list[int], args: argparse.Namespace
) -> dict[str, list[float]]:
    """Mean and median relative error per method and j; returns the means per method."""
    groups = {ell: entropy_l_diverse_groups(adult, QIDS, SENSITIVE, ell) for ell in ells}
    for ell, g in groups.items():
        print(f"entropy {ell}-diverse Mondrian: {int(g.max()) + 1} groups", flush=True)
    releases = [ra_release(adult, 1000 + s, method="ra", p="uniform") for s in range(args.seeds)]
    buckets = {ell: anatomy(adult, ell) for ell in ells}
    errors: dict[str, list[np.ndarray | None]] = {}
    for j in js:
        workload = QueryWorkload.generate(
            adult, QIDS, SENSITIVE, qd=j, n_queries=args.queries, seed=j, sizes="random"
        )

        def add(name: str, *estimates: np.ndarray, wl: QueryWorkload = workload) -> None:
            """Per-query error, averaged over the releases (one unless randomized); no estimate
            stands for an infeasible method."""
            value = (
                np.mean([relative_error(wl.actual, e) for e in estimates], axis=0)
                if estimates
                else None
            )
            errors.setdefault(name, []).append(value)

        add("RA", *(workload.estimate_direct(r) for r in releases))
        for ell, g in groups.items():
            for within in ("uniform", "marginal"):
                add(f"l-div. {within} l={ell}", estimate_groups(workload, adult, g, within))
            add(f"permutation l={ell}", lossy_join(workload, adult, g))
            b = buckets[ell]
            add(f"Anatomy l={ell}", *([] if b is None else [lossy_join(workload, adult, b)]))
    means: dict[str, list[float]] = {}
    for statistic, reduce in (("mean", np.mean), ("median", np.median)):
        print(f"\n{statistic} relative error\n")
        print("| j | " + " | ".join(errors) + " |")
        print("|---" * (1 + len(errors)) + "|")
        for n, j in enumerate(js):
            cells = [_cell(e[n], reduce) for e in errors.values()]
            print(f"| {j} | " + " | ".join(cells) + " |", flush=True)
    for name, per_j in errors.items():
        if all(e is not None for e in per_j):
            means[name] = [float(np.mean(e)) for e in per_j if e is not None]
    return means


def _cell(errors: np.ndarray | None, reduce: Callable[[np.ndarray], Any]) -> str:
    return "infeasible" if errors is None else f"{float(reduce(errors)):.4f}"


def _shuffled(adult: pd.DataFrame, group: np.ndarray, seed: int) -> pd.DataFrame:
    return permuted(adult, group, SENSITIVE, seed)


def fig7(
    adult: pd.DataFrame, domains: Sequence[Sequence[str]], args: argparse.Namespace
) -> dict[str, list[float]]:
    base = Associations(adult, domains)
    print(
        f"\nD: {len(base.itemsets)} quasi-sensitive itemsets, {len(base.rules)} rules "
        "QIDs => occupation\n"
    )
    print("| release | itemsets recovered | artificial itemsets | rules recovered | artificial |")
    print("|---|---|---|---|---|")
    cases: list[tuple[str, Callable[[int], pd.DataFrame]]] = [
        ("RA (uniform p)", lambda s: ra_release(adult, 1000 + s, method="ra", p="uniform"))
    ]
    groupings = [
        (f"permutation l={ell}", entropy_l_diverse_groups(adult, QIDS, SENSITIVE, ell))
        for ell in (5, 8, 10)
    ]
    for ell in (5, 7):
        b = anatomy(adult, ell)
        assert b is not None
        groupings.append((f"Anatomy l={ell}", b))
    cases.extend((name, partial(_shuffled, adult, g)) for name, g in groupings)
    return {
        name: _association_row(
            name, base, [Associations(make(s), domains) for s in range(args.seeds)]
        )
        for name, make in cases
    }


def _association_row(name: str, base: Associations, found: list[Associations]) -> list[float]:
    """Print and return: itemsets recovered, artificial itemsets, rules recovered, artificial."""
    items = [recovery(base.itemsets, f.itemsets) for f in found]
    rules = [recovery(base.rules, f.rules) for f in found]
    row = [
        statistics.fmean(r for r, _ in items),
        statistics.fmean(a for _, a in items),
        statistics.fmean(r for r, _ in rules),
        statistics.fmean(a for _, a in rules),
    ]
    print(f"| {name} | {row[0]:.3f} | {row[1]:.1f} | {row[2]:.3f} | {row[3]:.1f} |", flush=True)
    return row


def fig8a(
    adult: pd.DataFrame, domains: Sequence[Sequence[str]], args: argparse.Namespace
) -> dict[str, list[float]]:
    base = Associations(adult, domains)
    print("\nFig. 8(a): enhanced RA\n")
    print("| k | itemsets recovered | artificial itemsets | rules recovered | artificial rules |")
    print("|---|---|---|---|---|")
    out = {}
    for k in ENHANCED_KS:
        found = [
            Associations(ra_release(adult, 1000 + s, method="enhanced", attrs=k), domains)
            for s in range(args.seeds)
        ]
        out[str(k)] = _association_row(str(k), base, found)
    return out


def fig8b(
    adult: pd.DataFrame, domains: Sequence[Sequence[str]], args: argparse.Namespace
) -> dict[int, float]:
    base = Associations(adult, domains)
    found = [
        Associations(ra_release(adult, 1000 + s, method="enhanced", attrs=5), domains)
        for s in range(args.seeds)
    ]
    print("\nFig. 8(b): enhanced RA, k = 5, quasi-sensitive itemsets by length\n")
    print("| length | itemsets in D | recovered |")
    print("|---|---|---|")
    out = {}
    for length in sorted({len(i) for i in base.itemsets}):
        of_length = {i for i in base.itemsets if len(i) == length}
        out[length] = statistics.fmean(len(of_length & f.itemsets) / len(of_length) for f in found)
        print(f"| {length} | {len(of_length)} | {out[length]:.3f} |", flush=True)
    return out


def chart(results: dict[str, Any], path: str) -> None:
    """The reproduced panels, one per figure the run produced, in the paper's layout."""
    figure = Figure(figsize=(15, 3.2), dpi=80)
    FigureCanvasAgg(figure)
    panels = [key for key in ("6a", "6b", "7", "8a", "8b") if key in results]
    for n, key in enumerate(panels):
        axes = figure.add_subplot(1, len(panels), n + 1)
        data = results[key]
        if key == "6a":
            for name, means in data.items():
                if not name.startswith("l-div. uniform"):
                    axes.plot(range(1, len(means) + 1), means, marker="o", label=name)
            axes.set(xlabel="QIDs per query", ylabel="mean relative error", title="Fig. 6(a)")
            axes.set_yscale("log")
        elif key == "6b":
            names = [k for k in data if not k.startswith("l-div. uniform")]
            axes.barh(names, [data[k][0] for k in names])
            axes.set(xlabel="mean relative error (5 QIDs)", title="Fig. 6(b)")
            axes.tick_params(axis="y", labelsize=7)
        elif key == "7":
            axes.bar(list(data), [v[0] for v in data.values()], label="itemsets")
            axes.bar(list(data), [v[2] for v in data.values()], width=0.4, label="rules")
            axes.set(ylabel="recovered", title="Fig. 7")
            axes.tick_params(axis="x", labelrotation=45, labelsize=7)
        elif key == "8a":
            ks = [int(k) for k in data]
            axes.plot(ks, [v[0] for v in data.values()], marker="o", label="itemsets recovered")
            axes.plot(ks, [v[2] for v in data.values()], marker="s", label="rules recovered")
            twin = axes.twinx()
            twin.plot(ks, [v[1] for v in data.values()], "k--", label="artificial itemsets")
            twin.set_ylabel("artificial itemsets")
            axes.set(xlabel="k", ylabel="recovered", title="Fig. 8(a)")
        else:
            axes.bar([str(k) for k in data], list(data.values()))
            axes.set(xlabel="association length (k = 5)", ylabel="recovered", title="Fig. 8(b)")
        if key in ("6a", "7", "8a"):
            axes.legend(fontsize=6)
    figure.tight_layout()
    figure.savefig(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figs", default="6a,6b,7,8a,8b")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=3, help="releases per randomized row")
    parser.add_argument("--chart", help="write the figures' panels as one PNG here")
    args = parser.parse_args()
    adult = read_table(data_dir() / "adult" / "adult_train.csv")
    domains = [observed_domain(adult[c]) for c in COLUMNS]
    figs = set(args.figs.split(","))
    began = time.perf_counter()
    print(f"Adult {len(adult):,} rows, {args.queries} queries per set, {args.seeds} seeds")
    results: dict[str, Any] = {}
    if "6a" in figs:
        print("\nFig. 6(a): relative error by QIDs per query, l = 10")
        results["6a"] = fig6(adult, list(range(1, 9)), [10], args)
    if "6b" in figs:
        print("\nFig. 6(b): relative error, 5 QIDs per query, l = 10, 8, 5")
        results["6b"] = fig6(adult, [5], [10, 8, 5], args)
    if "7" in figs:
        print("\nFig. 7: quasi-sensitive associations, RA against permutation")
        results["7"] = fig7(adult, domains, args)
    if "8a" in figs:
        results["8a"] = fig8a(adult, domains, args)
    if "8b" in figs:
        results["8b"] = fig8b(adult, domains, args)
    if args.chart:
        chart(results, args.chart)
    print(f"\n({time.perf_counter() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
