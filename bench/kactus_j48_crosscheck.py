"""Cross-check of the classification protocol's C4.5 against Weka's J48 on the same releases.

The kACTUS paper trained Weka's J48 on each anonymized training half. Our protocol trains the
project's C4.5-style tree instead, with missing cells imputed at random where J48 splits cases
into fractional instances (docs/kactus.md). This script anonymizes the same 5x2 folds as
``bench/reproduce_kactus.py`` (seed 1), writes each release and its raw test half as ARFF, runs
J48 (default options: -C 0.25 -M 2) on them, and prints J48's test accuracy beside ours, fold
by fold: if both collapse on the same folds, the collapse comes from the release, not from our
inducer. Weka is not part of the project: pass the path of a ``weka.jar`` you have.

Run: ``.venv/bin/python bench/kactus_j48_crosscheck.py --weka-jar PATH [--method kactus]
[--ks 5,50,500] [--folds 10] [--numeric-as-missing] [--out j48.json]``
(``--method original --ks 1``: J48 on the raw training halves).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from fedanon.experiments.classification import (
    Prepared,
    five_by_two_folds,
    fold_accuracy,
    numeric_columns,
)
from fedanon.experiments.k_anonymizers import anonymizers
from fedanon.readers.datadir import data_dir
from fedanon.utility.benchmark_tables import load_table

_ACCURACY = re.compile(
    r"=== Error on test data ===\s+Correctly Classified Instances\s+\d+\s+([\d.]+)"
)


def adult_with_unknowns() -> pd.DataFrame:
    """The paper's Adult: all 48,842 UCI records (train + test files), unknowns kept as ``?``."""
    columns = list(load_table("adult").columns)
    parts = [
        pd.read_csv(
            data_dir() / "adult" / name,
            header=None,
            names=columns,
            dtype=str,
            skipinitialspace=True,
            keep_default_na=False,
            comment="|",
        )
        for name in ("adult.data", "adult.test")
    ]
    table = pd.concat(parts, ignore_index=True).dropna(how="all")
    table["class"] = table["class"].str.rstrip(".")
    return table.reset_index(drop=True)


def arff(table: pd.DataFrame, domains: dict[str, list[str] | None], marker: str | None) -> str:
    """The table as ARFF text: `domains` gives each nominal column's values (None: numeric);
    a cell equal to the marker or to ``?`` (ARFF's own missing value, Adult's unknowns), or a
    numeric cell that is not a number, is missing."""
    lines = ["@relation release"]
    for name, values in domains.items():
        kind = "numeric" if values is None else "{" + ",".join(map(_quote, values)) + "}"
        lines.append(f"@attribute {_quote(name)} {kind}")
    lines.append("@data")
    columns = []
    for name, values in domains.items():
        cells = table[name].astype(str).to_numpy(dtype=object)
        missing = (cells == marker) | (cells == "?")
        if values is None:
            numbers = pd.to_numeric(pd.Series(cells), errors="coerce")
            missing |= numbers.isna().to_numpy()
            text = np.where(missing, "?", cells)
        else:
            text = np.where(missing, "?", np.array([_quote(v) for v in cells], dtype=object))
        columns.append(text)
    lines += [",".join(row) for row in zip(*columns, strict=True)]
    return "\n".join(lines) + "\n"


def _quote(value: str) -> str:
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def j48_accuracy(weka_jar: Path, train: str, test: str) -> float:
    """J48's accuracy (%) on `test` after training on `train` (ARFF texts)."""
    with tempfile.TemporaryDirectory() as scratch:
        train_path, test_path = Path(scratch, "train.arff"), Path(scratch, "test.arff")
        train_path.write_text(train, encoding="utf-8")
        test_path.write_text(test, encoding="utf-8")
        command = ["java", "-Xmx1g", "-cp", str(weka_jar), "weka.classifiers.trees.J48"]
        command += ["-t", str(train_path), "-T", str(test_path), "-o"]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    found = _ACCURACY.search(out)
    if not found:
        raise RuntimeError(f"no test accuracy in J48's output:\n{out[-2000:]}")
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weka-jar", required=True, type=Path)
    parser.add_argument("--table", default="adult", help="a benchmark table or adult-unknowns")
    parser.add_argument("--method", default="kactus")
    parser.add_argument("--ks", default="5,50,500")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--numeric-as-missing", action="store_true")
    parser.add_argument("--out", default="kactus_j48_crosscheck.json")
    args = parser.parse_args()
    df = adult_with_unknowns() if args.table == "adult-unknowns" else load_table(args.table)
    numeric = numeric_columns(df, exclude=["class"])
    domains = {c: None if c in numeric else sorted(df[c].astype(str).unique()) for c in df.columns}
    folds = five_by_two_folds(df["class"], 1)[: args.folds]
    anonymize: Callable[[pd.DataFrame, pd.DataFrame, int, int, set[str]], Prepared]
    if args.method == "original":  # the raw training half: the paper's k = 1 column

        def anonymize(
            train: pd.DataFrame, test: pd.DataFrame, k: int, seed: int, numeric: set[str]
        ) -> Prepared:
            return Prepared(train, test, numeric, marker=None)

    else:
        [anonymize] = anonymizers([args.method], "class").values()
    rows = []
    for k in [int(k) for k in args.ks.split(",")]:
        for number, (train_rows, test_rows) in enumerate(folds):
            train, test = df.iloc[train_rows], df.iloc[test_rows]
            prepared = anonymize(train, test, k, 1000 + number, numeric)
            if args.numeric_as_missing:
                released = prepared.train.copy()
                for column in numeric:
                    released[column] = prepared.marker
                prepared = Prepared(released, test, numeric, prepared.marker)
            ours = 100.0 * fold_accuracy(prepared, "class", "c45", 1 + number)
            j48 = j48_accuracy(
                args.weka_jar,
                arff(prepared.train, domains, prepared.marker),
                arff(test, domains, None),
            )
            rows.append({"k": k, "fold": number, "ours": round(ours, 2), "j48": round(j48, 2)})
            print(f"k={k:>5} fold {number}: ours {ours:6.2f}  J48 {j48:6.2f}", flush=True)
        mine = [r["ours"] for r in rows if r["k"] == k]
        theirs = [r["j48"] for r in rows if r["k"] == k]
        print(
            f"k={k:>5} mean: ours {np.mean(mine):.2f} ± {np.std(mine, ddof=1):.2f}  "
            f"J48 {np.mean(theirs):.2f} ± {np.std(theirs, ddof=1):.2f}",
            flush=True,
        )
    Path(args.out).write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
