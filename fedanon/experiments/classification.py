"""The kACTUS paper's classification protocol, shared by every anonymization method.

5x2 cross-validation (Alpaydin): five times, the records are split at random into two halves
(stratified by class, our choice); each half is once the training set and once the test set.
Only the training half is anonymized; the classifier trained on the release is tested on the
other half as it is (raw), unless the method says how test records must be presented (a
generalization method maps them to its released labels, as the paper did for TDS).

Inducers: the project's C4.5-style tree, naive Bayes and logistic regression (scikit-learn).
A release holds text cells, so features are encoded one way for every method:

- A column is numeric when every raw value parses as a number. In a release, a numeric cell
  may hold a number (kept, or a kACTUS group mean), a range ``[lo, hi]`` (Mondrian; read as
  its midpoint) or no number (the suppression marker): that cell is missing. Every other column
  is categorical, and a cell holding the suppression marker is missing.
- The paper's inducers (Weka) train on missing values: C4.5 sends a case with a missing value
  down every branch with weights proportional to the known values, naive Bayes skips it. Our
  C4.5 does not train on missing values, so for C4.5 and logistic regression each missing cell
  is replaced by a value drawn at random (seeded) from the known values of the same column of
  the training release: the same branch proportions as C4.5's weights, in expectation. Naive
  Bayes skips missing cells exactly (per-attribute models fitted on the known cells). A column
  with no known value is constant (the marker; 0 for numbers).
- Treating the marker as a category of its own would be wrong for trees: test records never
  hold it, so every branch on a real value would be learned only from the few records whose
  value survived, a biased sample (this drops C4.5 on kACTUS releases of Adult below the
  majority class).
- ``logistic-weka`` is Weka's Logistic as the kACTUS paper ran it: every missing cell replaced
  by its column's mean (numbers) or mode (categories) over the training release (Weka's
  ReplaceMissingValues) and a near-unregularized fit (ridge 1e-8, i.e. C = 1 / (2 * 1e-8)).
  On kACTUS releases that replacement makes a suppressed QID one value, and the paper's
  Logistic rows follow it (docs/reproduction.md, "Table 2 on the other UCI sets").
- A test value the release never shows is unknown: C4.5 sends it down every branch, naive
  Bayes skips the attribute, logistic regression gives it no indicator.

Results: mean accuracy and standard deviation over the 10 folds per (method, k, inducer), and
the combined 5x2 cv F test (Alpaydin 1999) between each method and the raw data (k=1) and
between methods at the same k, on the same folds.
"""

from __future__ import annotations

import math
import re
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from fedanon.arguments import column_list, require_frame, require_int
from fedanon.errors import FedanonError, MissingColumnError
from fedanon.experiments.k_anonymizers import Anonymizer, Prepared, anonymizers
from fedanon.utility.c45 import C45

INDUCERS = ("c45", "naive-bayes", "logistic", "logistic-weka")
ORIGINAL = "original"  # the raw training half: the paper's k = 1 column
_RANGE = re.compile(r"^\[\s*([^,\]]+)\s*,\s*([^\]]+)\s*\]$")
_ALPHA = 0.05
_WEKA_C = 1.0 / (2.0 * 1e-8)  # Weka Logistic's default ridge, as scikit-learn's inverse C


def numeric_columns(df: pd.DataFrame, exclude: Iterable[str] = ()) -> set[str]:
    """Columns whose every present value parses as a number."""
    out = set()
    for name in df.columns:
        if name in set(exclude):
            continue
        col = df[name]
        text = col.astype(object).mask(col.isna())
        parsed = pd.to_numeric(text, errors="coerce")
        if parsed.notna().any() and (parsed.notna() | text.isna()).all():
            out.add(str(name))
    return out


def five_by_two_folds(labels: pd.Series, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Ten (train, test) position pairs: 5 stratified random halvings, each used both ways."""
    rng = np.random.default_rng(seed)
    codes = pd.factorize(labels)[0]
    folds = []
    for _ in range(5):
        first = np.zeros(len(codes), dtype=bool)
        for c in np.unique(codes):
            members = rng.permutation(np.flatnonzero(codes == c))
            first[members[: (len(members) + rng.integers(0, 2)) // 2]] = True
        a, b = np.flatnonzero(first), np.flatnonzero(~first)
        folds += [(a, b), (b, a)]
    return folds


def five_by_two_f_test(errors_a: ArrayLike, errors_b: ArrayLike) -> dict[str, float]:
    """Alpaydin's combined 5x2 cv F test on per-fold error rates (fold order: replication i
    gives folds 2i and 2i+1). F follows F(10, 5) when both methods have the same error."""
    from scipy.stats import f as f_dist

    p = np.asarray(errors_a, dtype=float) - np.asarray(errors_b, dtype=float)
    if p.shape != (10,):
        raise ValueError("the 5x2 cv F test needs 10 folds per method")
    pairs = p.reshape(5, 2)
    s2 = ((pairs - pairs.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    numerator = float((p**2).sum())
    denominator = 2.0 * float(s2.sum())
    if denominator == 0.0:
        f_value = math.inf if numerator > 0 else 0.0
        p_value = 0.0 if numerator > 0 else 1.0
    else:
        f_value = numerator / denominator
        p_value = float(f_dist.sf(f_value, 10, 5))
    return {"F": f_value, "p": p_value, "significant": p_value < _ALPHA}


def evaluate_classification(
    df: pd.DataFrame,
    *,
    class_column: str,
    methods: Sequence[str] | Mapping[str, Anonymizer] = ("kactus", "mondrian"),
    k_values: Sequence[int] = (5, 10, 20, 30),
    inducers: Sequence[str] = ("c45",),
    qids: Sequence[str] | None = None,
    taxonomy: str | Path | None = None,
    seed: int = 1,
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the protocol; the report holds per-fold accuracies, means, stds and F tests.

    `methods` names the anonymizers (kactus, mondrian, tds; tds needs a `taxonomy` file, all
    anonymize `qids`, default every column but the class) or maps names to adapters of one's
    own. `on_step` receives a progress line as each (fold, method, k) release is made and as
    each fold ends, with the seconds it took (a run on a large table lasts minutes per fold).
    """
    df, seed = require_frame(df), require_int(seed, "seed")
    if isinstance(methods, Mapping):
        adapters = dict(methods)
    else:
        names = column_list(methods, "methods", "method names") or []
        adapters = anonymizers(names, class_column, column_list(qids, "qids"), taxonomy)
    ks = [require_int(k, "k_values") for k in k_values]
    inducers = column_list(inducers, "inducers", "inducer names") or []
    if class_column not in df.columns:
        raise MissingColumnError(f"the table has no class column '{class_column}'")
    bad = [i for i in inducers if i not in INDUCERS]
    if bad:
        raise FedanonError(f"unknown inducer '{bad[0]}' (choose from {', '.join(INDUCERS)})")
    if not ks or any(k < 2 for k in ks):
        raise FedanonError("every k must be at least 2")
    df = df.reset_index(drop=True)
    numeric = numeric_columns(df, exclude=[class_column])
    folds = five_by_two_folds(df[class_column], seed)
    half = min(len(train) for train, _ in folds)
    if max(ks) > half:
        raise FedanonError(f"k = {max(ks)} exceeds the training half ({half} records)")
    accuracy: dict[tuple[str, int, str], list[float]] = {}
    released: dict[tuple[str, int], list[int]] = {}
    began = time.perf_counter()
    for number, (train_rows, test_rows) in enumerate(folds):
        fold = f"fold {number + 1}/{len(folds)}"
        fold_began = time.perf_counter()
        train, test = df.iloc[train_rows], df.iloc[test_rows]
        cases = [(ORIGINAL, 1, Prepared(train, test, numeric, marker=None))]
        for name, anonymize in adapters.items():
            for k in ks:
                case_began = time.perf_counter()
                prepared = anonymize(train, test, k, seed * 1000 + number, numeric)
                if on_step:
                    on_step(f"{fold} {name} k={k}: released in {_since(case_began)}")
                released.setdefault((name, k), []).append(len(prepared.train))
                cases.append((name, k, prepared))
        for name, k, prepared in cases:
            for inducer in inducers:
                score = fold_accuracy(prepared, class_column, inducer, seed + number)
                accuracy.setdefault((name, k, inducer), []).append(score)
        if on_step:
            on_step(f"{fold} done in {_since(fold_began)} ({_since(began)} in all)")
    return _report(accuracy, released, class_column, len(df), ks, inducers, list(adapters))


def _since(mark: float) -> str:
    return f"{time.perf_counter() - mark:.1f} s"


def fold_accuracy(prepared: Prepared, class_column: str, inducer: str, seed: int = 0) -> float:
    """Accuracy of `inducer` trained on the prepared training half, on its test half."""
    features = [c for c in prepared.train.columns if c != class_column]
    x_train, x_test = encode_features(prepared, features)
    y_train = prepared.train[class_column].astype(str).to_numpy()
    y_test = prepared.test[class_column].astype(str).to_numpy()
    numeric = [f for f in features if f in prepared.numeric]
    if inducer == "naive-bayes":
        predicted = _naive_bayes(x_train, y_train, x_test, numeric)
    elif inducer == "logistic-weka":
        filled = replace_missing(x_train, numeric)
        predicted = _logistic(filled, y_train, x_test, numeric, c=_WEKA_C)
    else:
        filled = impute_at_random(x_train, np.random.default_rng(seed))
        if inducer == "c45":
            predicted = C45().fit(filled, pd.Series(y_train), numeric=numeric).predict(x_test)
        else:
            predicted = _logistic(filled, y_train, x_test, numeric)
    return float(np.mean(np.asarray(predicted).astype(str) == y_test))


def encode_features(
    prepared: Prepared, features: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Training and test features (numbers as float, categories as text, missing as NaN /
    None in the training release; see the module docstring)."""
    train, test = {}, {}
    for name in features:
        if name in prepared.numeric:
            train[name] = released_numbers(prepared.train[name])
            test[name] = released_numbers(prepared.test[name])
        else:
            cells = prepared.train[name].astype(str).to_numpy(dtype=object)
            if prepared.marker is not None:
                cells[cells == prepared.marker] = None
            train[name] = cells
            test[name] = prepared.test[name].astype(str).to_numpy(dtype=object)
    return pd.DataFrame(train), pd.DataFrame(test)


def impute_at_random(x: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Missing cells replaced by random draws from the known cells of the same column."""
    out = {}
    for name in x.columns:
        column = x[name].to_numpy()
        missing = pd.isna(column)
        if missing.any():
            known = column[~missing]
            column = column.copy()
            if len(known):
                column[missing] = rng.choice(known, int(missing.sum()))
            else:
                column[missing] = 0.0 if column.dtype.kind == "f" else "?"
        out[name] = column
    return pd.DataFrame(out)


def replace_missing(x: pd.DataFrame, numeric: Sequence[str]) -> pd.DataFrame:
    """Weka's ReplaceMissingValues: missing cells get the mean (numeric columns) or the most
    frequent value (the others) of the known cells of their column."""
    out = {}
    for name in x.columns:
        column = pd.Series(x[name].to_numpy())
        known = column.dropna()
        if name in numeric:
            fill: Any = float(known.astype(float).mean()) if len(known) else 0.0
        else:
            fill = known.astype(str).value_counts().index[0] if len(known) else "?"
        out[name] = column.fillna(fill).to_numpy()
    return pd.DataFrame(out)


def released_numbers(column: pd.Series) -> np.ndarray:
    """Numbers of a released numeric column: ranges as midpoints, anything else NaN."""
    text = column.astype(str).str.strip()
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    ranged = text.str.extract(_RANGE)
    lo = pd.to_numeric(ranged[0], errors="coerce").to_numpy(dtype=float)
    hi = pd.to_numeric(ranged[1], errors="coerce").to_numpy(dtype=float)
    return np.where(np.isnan(values), (lo + hi) / 2.0, values)


def _naive_bayes(
    x_train: pd.DataFrame, y_train: np.ndarray, x_test: pd.DataFrame, numeric: list[str]
) -> np.ndarray:
    """Naive Bayes over mixed attributes: scikit-learn's Gaussian model for each numeric
    attribute and its categorical model (Laplace smoothing) for each other one, each fitted on
    the training cells that are known; a test value unseen in training contributes nothing, as
    in Weka's NaiveBayes for missing values."""
    from sklearn.naive_bayes import CategoricalNB, GaussianNB

    classes, y = np.unique(y_train, return_inverse=True)
    counts = np.bincount(y, minlength=len(classes))
    score = np.tile(np.log(counts / len(y)), (len(x_test), 1))
    for name in x_train.columns:
        column = x_train[name].to_numpy()
        known = ~pd.isna(column)
        present = np.unique(y[known])
        if len(present) < len(classes):
            continue  # a class without a known value: the attribute cannot be modelled
        if name in numeric:
            values = column[known].astype(float)
            if np.ptp(values) == 0:
                continue  # a constant carries no information (and has no variance)
            model = GaussianNB().fit(values[:, None], y[known])
            test = x_test[name].to_numpy(dtype=float)
            ok = ~np.isnan(test)
            joint = model.predict_joint_log_proba(test[ok][:, None])
            score[ok] += joint - np.log(model.class_prior_)
            continue
        values, codes = np.unique(column[known].astype(str), return_inverse=True)
        model = CategoricalNB(alpha=1.0, min_categories=len(values)).fit(codes[:, None], y[known])
        position = {v: i for i, v in enumerate(values)}
        test_codes = np.array([position.get(str(v), -1) for v in x_test[name]], dtype=np.intp)
        ok = test_codes >= 0
        score[ok] += model.feature_log_prob_[0][:, test_codes[ok]].T
    return classes[np.argmax(score, axis=1)]


def _logistic(
    x_train: pd.DataFrame,
    y_train: np.ndarray,
    x_test: pd.DataFrame,
    numeric: list[str],
    c: float = 1.0,
) -> np.ndarray:
    """Logistic regression on standardized numbers and one indicator per categorical value;
    `c` is scikit-learn's inverse L2 strength (large for Weka's near-unregularized fit, whose
    iterations may stop before convergence, as Weka's own optimizer does)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    categorical = [c for c in x_train.columns if c not in set(numeric)]
    encode = ColumnTransformer(
        [
            ("numbers", StandardScaler(), numeric),
            ("categories", OneHotEncoder(handle_unknown="ignore"), categorical),
        ]
    )
    model = make_pipeline(encode, LogisticRegression(C=c, max_iter=500))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(x_train, y_train).predict(x_test)


def _report(
    accuracy: dict[tuple[str, int, str], list[float]],
    released: dict[tuple[str, int], list[int]],
    class_column: str,
    records: int,
    ks: Sequence[int],
    inducers: Sequence[str],
    methods: list[str],
) -> dict[str, Any]:
    results = []
    for (name, k, inducer), scores in accuracy.items():
        row: dict[str, Any] = {
            "method": name,
            "k": k,
            "inducer": inducer,
            "accuracy_mean": 100.0 * float(np.mean(scores)),
            "accuracy_std": 100.0 * float(np.std(scores, ddof=1)),
            "accuracies": [round(100.0 * s, 4) for s in scores],
        }
        if (name, k) in released:
            row["released_mean"] = float(np.mean(released[(name, k)]))
        results.append(row)
    comparisons = []
    for inducer in inducers:
        base = accuracy[(ORIGINAL, 1, inducer)]
        for k in ks:
            for i, name in enumerate(methods):
                mine = accuracy[(name, k, inducer)]
                test = five_by_two_f_test(1 - np.asarray(mine), 1 - np.asarray(base))
                comparisons.append({"a": name, "b": ORIGINAL, "k": k, "inducer": inducer, **test})
                for other in methods[i + 1 :]:
                    theirs = accuracy[(other, k, inducer)]
                    test = five_by_two_f_test(1 - np.asarray(mine), 1 - np.asarray(theirs))
                    comparisons.append({"a": name, "b": other, "k": k, "inducer": inducer, **test})
    return {
        "protocol": "5x2 cross-validation; training half anonymized, raw test half",
        "class": class_column,
        "records": records,
        "methods": methods,
        "ks": list(ks),
        "inducers": list(inducers),
        "results": results,
        "comparisons": comparisons,
    }
