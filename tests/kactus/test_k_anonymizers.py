"""Method adapters of the classification protocol, TDS in particular (test-set fitting)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.experiments.classification import numeric_columns
from fedanon.experiments.k_anonymizers import anonymizers
from fedanon.models.k_anonymity import check_k_anonymity

TAXONOMY = '''
[attributes.job]
kind = "categorical"
tree = """
Any
  Office
    a
    b
  Field
    c
    d
"""

[attributes.age]
kind = "numeric"
dynamic = true
'''


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"job": rng.choice(list("abcd"), n), "age": rng.integers(18, 80, n)})
    df["class"] = np.where((df["job"] < "c") ^ (df["age"] > 50), "y", "n")
    return df.astype(str)


def test_tds_fits_the_test_half_to_the_release_cut(tmp_path):
    path = tmp_path / "tax.toml"
    path.write_text(TAXONOMY, encoding="utf-8")
    train, test = _table(200, 0), _table(100, 1)
    numeric = numeric_columns(train, ["class"])
    [tds] = anonymizers(["tds"], "class", taxonomy=path).values()
    prepared = tds(train, test, 10, 0, numeric)
    assert check_k_anonymity(prepared.train, ["job", "age"], 10).ok
    # every generalized test value is a label the release uses, and numbers became labels
    for column in ("job", "age"):
        assert set(prepared.test[column]) <= set(prepared.train[column].astype(str))
    assert prepared.numeric == set()
    assert prepared.test["class"].tolist() == test["class"].tolist()


def test_tds_without_a_taxonomy_and_unknown_methods_are_errors():
    with pytest.raises(FedanonError, match="needs a taxonomy"):
        anonymizers(["tds"], "class")
    with pytest.raises(FedanonError, match="unknown method 'lkc'"):
        anonymizers(["lkc"], "class")
