"""The LKC paper's utility protocol (section 6.1; spec "Evaluation protocol").

All records are anonymized together; the release is then split back into its training and test
rows. Four figures describe a release:

- CE: error of a C4.5 tree trained on the generalized training rows, measured on the
  generalized test rows. Every attribute except the class is a feature: QIDs as released
  (generalized labels, hence categorical), the other attributes unchanged.
- BE (baseline error): the same on the raw data, numeric QIDs numeric. CE - BE is the cost of
  privacy.
- UE (upper-bound error): the same on the raw data with every QID removed, the naive way to
  prevent linkage. UE - CE is the benefit of anonymizing over dropping the QIDs. With no
  attribute left UE is the error of predicting the training majority class.
- DR: discernibility ratio of the whole release (training and test rows).

Non-QID attributes are identical in the raw data and the release, so they are used the same way
in all three trees: numeric if listed in ``numeric_other`` (by default, if numeric in the raw
training table), otherwise categorical.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from fedanon.errors import FedanonError, MissingColumnError
from fedanon.utility.metrics import classification_error, discernibility_ratio


def baseline_errors(
    raw_train: pd.DataFrame,
    raw_test: pd.DataFrame,
    class_col: str,
    qids: Sequence[str],
    numeric_qids: Iterable[str],
    numeric_other: Iterable[str] | None = None,
) -> dict[str, float]:
    """BE and UE in percent. They do not depend on the release: compute them once per sweep
    and pass them to :func:`evaluate_release` as ``baseline``."""
    features = _features(raw_train, class_col, qids, numeric_qids)
    others = _numeric_others(raw_train, features, qids, numeric_other)
    _require_columns(raw_test, [*features, class_col], "raw test table")
    remaining = [f for f in features if f not in set(qids)]
    be = classification_error(raw_train, raw_test, class_col, features, set(numeric_qids) | others)
    ue = classification_error(raw_train, raw_test, class_col, remaining, others)
    return {"BE": 100.0 * be, "UE": 100.0 * ue}


def evaluate_release(
    raw_train: pd.DataFrame,
    raw_test: pd.DataFrame,
    released_train: pd.DataFrame,
    released_test: pd.DataFrame,
    class_col: str,
    qids: Sequence[str],
    numeric_qids: Iterable[str],
    numeric_other: Iterable[str] | None = None,
    baseline: Mapping[str, float] | None = None,
) -> dict[str, float | int]:
    """CE, BE, UE (percent), DR (ratio in [0, 1]) of a release, as a JSON-able dict.

    Also reports ``cost`` = CE - BE and ``benefit`` = UE - CE (percentage points, the
    differences the paper discusses) and the row counts. ``released_*`` hold the same rows as
    ``raw_*`` in the same order; ``baseline`` (from :func:`baseline_errors`) skips
    recomputing BE and UE.
    """
    features = _features(raw_train, class_col, qids, numeric_qids)
    others = _numeric_others(raw_train, features, qids, numeric_other)
    for name, table, raw in (
        ("released training table", released_train, raw_train),
        ("released test table", released_test, raw_test),
    ):
        _require_columns(table, [*features, class_col], name)
        if len(table) != len(raw):
            raise FedanonError(f"{name} has {len(table)} rows, the raw one {len(raw)}")
    if baseline is None:
        baseline = baseline_errors(raw_train, raw_test, class_col, qids, numeric_qids, others)
    ce = 100.0 * classification_error(released_train, released_test, class_col, features, others)
    release = pd.concat([released_train[list(qids)], released_test[list(qids)]], ignore_index=True)
    be = float(baseline["BE"])
    ue = float(baseline["UE"])
    return utility_figures(ce, be, ue, release, qids, len(released_train), len(released_test))


def utility_figures(
    ce: float,
    be: float,
    ue: float,
    release: pd.DataFrame,
    qids: Sequence[str],
    n_train: int,
    n_test: int,
) -> dict[str, float | int]:
    """The figures of :func:`evaluate_release` from the three errors (percent) and the
    release's QID columns: one definition of cost, benefit and DR for the pooled and the
    federated evaluation."""
    return {
        "CE": ce,
        "BE": be,
        "UE": ue,
        "DR": discernibility_ratio(release, qids),
        "cost": ce - be,
        "benefit": ue - ce,
        "n_train": n_train,
        "n_test": n_test,
    }


def _features(
    raw_train: pd.DataFrame, class_col: str, qids: Sequence[str], numeric_qids: Iterable[str]
) -> list[str]:
    """Every column but the class, after checking that QIDs and numeric QIDs are among them."""
    _require_columns(raw_train, [class_col, *qids], "raw training table")
    not_qid = sorted(set(numeric_qids) - set(qids))
    if not_qid:
        raise FedanonError(f"numeric QIDs that are not QIDs: {', '.join(not_qid)}")
    return [str(c) for c in raw_train.columns if c != class_col]


def _numeric_others(
    raw_train: pd.DataFrame,
    features: Sequence[str],
    qids: Sequence[str],
    numeric_other: Iterable[str] | None,
) -> set[str]:
    """Non-QID features to treat as numeric: as given, or those numeric in the raw data."""
    others = [f for f in features if f not in set(qids)]
    if numeric_other is None:
        return {
            f
            for f in others
            if pd.api.types.is_numeric_dtype(raw_train[f])
            and not pd.api.types.is_bool_dtype(raw_train[f])
        }
    chosen = set(numeric_other)
    wrong = sorted(chosen - set(others))
    if wrong:
        raise FedanonError(f"numeric non-QID attributes not in the table: {', '.join(wrong)}")
    return chosen


def _require_columns(table: pd.DataFrame, columns: Sequence[str], name: str) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise MissingColumnError(f"{name} lacks column(s): {', '.join(missing)}")
