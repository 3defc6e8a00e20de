"""The Weka-style logistic inducer of the kACTUS Table 2 reproduction (normal suite).

Weka's Logistic replaces each missing value by its column's mean or mode before fitting
(ReplaceMissingValues); the paper's Logistic rows follow that (docs/reproduction.md, kACTUS,
"Table 2 on the other UCI sets"). Expected values below are computed by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.experiments.classification import (
    INDUCERS,
    Prepared,
    evaluate_classification,
    fold_accuracy,
    replace_missing,
)


def test_replace_missing_uses_the_mean_of_numbers_and_the_mode_of_categories():
    x = pd.DataFrame(
        {
            "n": np.array([1.0, np.nan, 5.0, np.nan]),
            "c": np.array(["a", None, "b", "b"], dtype=object),
            "empty": np.array([None, None, None, None], dtype=object),
        }
    )
    out = replace_missing(x, ["n"])
    assert out["n"].tolist() == [1.0, 3.0, 5.0, 3.0]
    assert out["c"].tolist() == ["a", "b", "b", "b"]
    assert out["empty"].tolist() == ["?"] * 4  # no known value: one constant


def test_weka_logistic_sees_a_suppressed_qid_as_its_mode_not_as_random_draws():
    # "q" is suppressed ("?") in every record of class y; its known cells all say "u" (class
    # x). Weka's replacement gives every suppressed cell the mode "u", so "q" no longer
    # separates the classes and "r" (x: "s", y: "t") decides. A test record with q = "u" and
    # r = "t" is then class y.
    train = pd.DataFrame(
        {
            "q": ["u"] * 6 + ["?"] * 6,
            "r": ["s"] * 5 + ["t"] + ["t"] * 5 + ["s"],
            "class": ["x"] * 6 + ["y"] * 6,
        }
    )
    test = pd.DataFrame({"q": ["u"], "r": ["t"], "class": ["y"]})
    prepared = Prepared(train, test, set(), marker="?")
    assert fold_accuracy(prepared, "class", "logistic-weka") == 1.0


def test_logistic_weka_is_offered_and_unknown_inducers_fail():
    assert "logistic-weka" in INDUCERS
    table = pd.DataFrame({"a": ["p", "q"] * 10, "class": ["x", "y"] * 10})
    with pytest.raises(FedanonError, match="unknown inducer 'weka'"):
        evaluate_classification(table, class_column="class", inducers=["weka"], k_values=[2])
