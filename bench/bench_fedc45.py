"""Count-driven C4.5 (federated C4.5's learner) against the record-level fit, on Adult and on
synthetic rows.

Per table: the record-level `C45.fit` on the pooled table; the count-driven fit on the pooled
table (one local oracle); over P parties with the in-process ring secure sum
(`fedanon.crypto.simulate.ring_sum`: mask, P additions, unmask, as the daemons do minus the
network); the same with narrowed numeric histograms. Every count-driven tree is
checked equal to the record-level one.
Run: ``.venv/bin/python bench/bench_fedc45.py [--rows 1000000] [--parties 3]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from fedanon.crypto.simulate import ring_sum
from fedanon.readers.datadir import data_dir, have_data
from fedanon.synth import generate_hospital
from fedanon.utility.c45 import C45
from fedanon.utility.c45_counts import (
    FeatureKinds,
    FederatedOracle,
    LocalOracle,
    agree_schema,
    fit_from_counts,
    local_domains,
    plain_sum,
)

ADULT_NUMERIC = {"age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                 "hours-per-week"}  # fmt: skip


def _federated(
    X: pd.DataFrame,
    y: pd.Series,
    numeric: set[str],
    parties: int,
    add: Callable[[Sequence[np.ndarray]], np.ndarray],
    narrow: bool,
    min_leaf: int,
) -> tuple[C45, FederatedOracle, float]:
    order = np.random.default_rng(0).permutation(len(X))
    shares = [(X.iloc[p], y.iloc[p]) for p in np.array_split(order, parties)]
    began = time.perf_counter()
    kinds = FeatureKinds([str(c) for c in X.columns], frozenset(numeric))
    schema = agree_schema(kinds, [local_domains(px, py, kinds) for px, py in shares])
    oracle = FederatedOracle([LocalOracle(px, py, schema) for px, py in shares], add)
    model = fit_from_counts(oracle, schema, narrow=narrow, min_leaf=min_leaf)
    return model, oracle, time.perf_counter() - began


def _text(model: C45) -> str:
    return model.to_text()


def bench(
    name: str, X: pd.DataFrame, y: pd.Series, numeric: set[str], args: argparse.Namespace
) -> None:
    began = time.perf_counter()
    reference = C45(min_leaf=args.min_leaf).fit(X, y, numeric)
    central = time.perf_counter() - began
    shape = f"{len(X):,} rows, {X.shape[1]} features ({len(numeric)} numeric)"
    tree = f"tree {reference.n_nodes} nodes, depth {reference.depth}"
    print(f"\n{name}: {shape}, min_leaf {args.min_leaf}; {tree}")
    print(f"{'fit':<36} {'s':>8} {'x central':>9} {'rounds':>7} {'counts summed':>14} same")
    print(f"{'record-level C45.fit (pooled)':<36} {central:>8.2f} {1.0:>9.2f}")
    p = args.parties
    runs = [("count-driven, pooled (1 oracle)", 1, plain_sum, False)]
    runs.append((f"count-driven, {p} parties, ring sum", p, _ring, False))
    runs.append(("  same, narrowed histograms", p, _ring, True))
    for label, parties, add, narrow in runs:
        model, oracle, seconds = _federated(X, y, numeric, parties, add, narrow, args.min_leaf)
        same = _text(model) == _text(reference)
        print(f"{label:<36} {seconds:>8.2f} {seconds / central:>9.2f} {oracle.rounds:>7} "
              f"{oracle.counts_summed:>14,} {'yes' if same else 'NO'}")  # fmt: skip


def _ring(vectors: Sequence[np.ndarray]) -> np.ndarray:
    return ring_sum(vectors).astype(np.int64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="synthetic rows")
    parser.add_argument("--parties", type=int, default=3)
    parser.add_argument("--min-leaf", type=int, default=2)
    parser.add_argument("--skip-adult", action="store_true")
    args = parser.parse_args()
    if not args.skip_adult:
        if not have_data("adult"):
            raise SystemExit(f"Adult data not found under {data_dir()}")
        adult = pd.read_csv(data_dir() / "adult" / "adult_all.csv")
        features = [c for c in adult.columns if c != "class"]
        bench("Adult (adult_all.csv)", adult[features], adult["class"], ADULT_NUMERIC, args)
    if args.rows:
        table = generate_hospital(args.rows)
        features = [c for c in table.columns if c not in ("patient_id", "readmitted")]
        bench(
            f"synthetic hospital table ({args.rows:,} rows)",
            table[features],
            table["readmitted"],
            {"age", "length_of_stay"},
            args,
        )


if __name__ == "__main__":
    main()
