"""`fedanon.tidy`: every evaluate_* result as one row per measurement with named columns."""

from __future__ import annotations

import pandas as pd
import pytest

import fedanon
from fedanon.errors import FedanonError


def test_flat_measures_become_measure_value_rows() -> None:
    frame = fedanon.tidy({"CE": 27.2, "BE": 30.0, "n_test": 500, "ok": True, "note": "x"})
    assert frame.to_dict("records") == [
        {"measure": "CE", "value": 27.2},
        {"measure": "BE", "value": 30.0},
        {"measure": "n_test", "value": 500},
    ]


def test_records_lists_and_folds_keep_their_identifying_fields() -> None:
    result = {
        "protocol": "5x2",
        "ks": [5],
        "results": [
            {
                "method": "kactus",
                "k": 5,
                "inducer": "c45",
                "accuracy_mean": 70.0,
                "accuracies": [69.0, 71.0],
            },
        ],
    }
    frame = fedanon.tidy(result)
    assert list(frame.columns) == ["method", "inducer", "k", "measure", "trial", "value"]
    rows = [tuple(None if pd.isna(v) else v for v in r) for r in frame.itertuples(index=False)]
    assert rows == [
        ("kactus", "c45", 5, "results.accuracy_mean", None, 70.0),
        ("kactus", "c45", 5, "results.accuracies", 1, 69.0),
        ("kactus", "c45", 5, "results.accuracies", 2, 71.0),
    ]


def test_release_and_attribute_keys_become_columns() -> None:
    queries = {
        "workload": {"qd": 2, "s": 0.05, "queries": 200},
        "releases": ["local", "lossy"],
        "default": {
            "qd": 2,
            "s": 0.05,
            "local": {"average_relative_error": 0.4},
            "lossy": {"average_relative_error": 0.1},
        },
    }
    frame = fedanon.tidy(queries)
    assert frame[["release", "qd", "measure", "value"]].values.tolist() == [
        ["local", 2, "default.average_relative_error", 0.4],
        ["lossy", 2, "default.average_relative_error", 0.1],
    ]
    bias = fedanon.tidy({"Pa": 47.2, "attributes": {"age": {"domain": 101}, "sex": {"domain": 2}}})
    assert frame.shape[0] == 2
    assert bias.fillna("-").values.tolist() == [
        ["-", "Pa", 47.2],
        ["age", "domain", 101],
        ["sex", "domain", 2],
    ]


def test_a_non_result_is_refused_in_one_line() -> None:
    with pytest.raises(
        FedanonError, match="tidy takes an evaluate_\\* result \\(a dict\\), got list"
    ):
        fedanon.tidy([1, 2])
    with pytest.raises(FedanonError, match="holds no measurement"):
        fedanon.tidy({"method": "drbt"})
