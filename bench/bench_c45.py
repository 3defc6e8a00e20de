"""Benchmark of the C4.5 inducer on UCI Adult (the paper's BE/UE set-up).

Prints, per configuration, the best-of-N fit and predict wall time, the tree size and the test
error. Run: ``.venv/bin/python bench/bench_c45.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedanon.readers.datadir import data_dir, have_data
from fedanon.utility.c45 import C45

NUMERIC = {"age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"}


@dataclass
class Case:
    name: str
    features: list[str]
    numeric: set[str]
    options: dict[str, bool]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (best is shown)")
    args = parser.parse_args()
    if not have_data("adult"):
        raise SystemExit(f"Adult data not found under {data_dir()}")
    folder = data_dir() / "adult"
    train = pd.read_csv(folder / "adult_train.csv", engine="pyarrow")
    test = pd.read_csv(folder / "adult_test.csv", engine="pyarrow")
    features = [c for c in train.columns if c != "class"]
    cases = [
        Case("BE (C4.5 defaults)", features, NUMERIC, {}),
        Case("BE, no subtree raising", features, NUMERIC, {"subtree_raising": False}),
        Case("BE, unpruned", features, NUMERIC, {"prune": False}),
        Case("BE, all categorical", features, set(), {}),
        Case("UE (martial-status only)", ["martial-status"], set(), {}),
    ]
    print(f"Adult: {len(train)} training rows, {len(test)} test rows, best of {args.repeat}")
    header = f"{'case':<26} {'fit s':>7} {'predict s':>9} {'nodes':>6} {'leaves':>6} "
    print(header + f"{'depth':>5} {'error %':>8}")
    truth = test["class"].to_numpy()
    for case in cases:
        fit_times: list[float] = []
        predict_times: list[float] = []
        for _ in range(args.repeat):
            began = time.perf_counter()
            model = C45(**case.options).fit(train[case.features], train["class"], case.numeric)
            fitted = time.perf_counter()
            predicted = model.predict(test[case.features])
            predict_times.append(time.perf_counter() - fitted)
            fit_times.append(fitted - began)
        error = 100.0 * float(np.mean(predicted != truth))
        print(
            f"{case.name:<26} {min(fit_times):7.2f} {min(predict_times):9.3f} "
            f"{model.n_nodes:6d} {model.n_leaves:6d} {model.depth:5d} {error:8.2f}"
        )


if __name__ == "__main__":
    main()
