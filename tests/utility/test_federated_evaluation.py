"""The LKC utility protocol over parties (BE, CE, UE, DR) equals the pooled protocol exactly."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from fedanon.crypto.simulate import ring_sum
from fedanon.errors import FedanonError
from fedanon.readers.datadir import data_dir
from fedanon.utility.benchmark_tables import has_table, load_table
from fedanon.utility.evaluation import evaluate_release
from fedanon.utility.federated_evaluation import PartyTables, evaluate_release_federated


def _generalize(df: pd.DataFrame, numeric_qids: Sequence[str], qids: Sequence[str]) -> pd.DataFrame:
    """A stand-in release with the same rows in the same order: numbers cut into bands,
    every other QID's rare values merged (the protocol does not depend on the anonymizer)."""
    out = df.copy()
    for name in qids:
        if name in numeric_qids:
            band = (pd.to_numeric(df[name]) // 10 * 10).astype(int)
            out[name] = "[" + band.astype(str) + "-" + (band + 10).astype(str) + ")"
        else:
            common = df[name].value_counts().index[:3]
            out[name] = df[name].where(df[name].isin(common), "other").astype(str)
    return out


def _split(
    train: pd.DataFrame, test: pd.DataFrame, qids: list[str], numeric: list[str], sizes: list[int]
) -> tuple[list[PartyTables], pd.DataFrame, pd.DataFrame]:
    rel_train, rel_test = _generalize(train, numeric, qids), _generalize(test, numeric, qids)
    rng = np.random.default_rng(3)
    a = np.array_split(rng.permutation(len(train)), np.cumsum(sizes)[:-1])
    b = np.array_split(rng.permutation(len(test)), len(sizes))
    parties = [
        PartyTables(train.iloc[i], test.iloc[j], rel_train.iloc[i], rel_test.iloc[j])
        for i, j in zip(a, b, strict=True)
    ]
    return parties, rel_train, rel_test


def _german() -> tuple[pd.DataFrame, pd.DataFrame]:
    df = load_table("german")
    for name in ("duration", "amount", "age"):
        df[name] = df[name].astype(int)
    order = np.random.default_rng(0).permutation(len(df))
    return df.iloc[order[:600]].reset_index(drop=True), df.iloc[order[600:]].reset_index(drop=True)


@pytest.mark.parametrize("sizes", [[200, 200, 200], [2, 98, 500], [120] * 5])
def test_german_figures_equal_the_pooled_protocol(sizes: list[int]) -> None:
    if not has_table("german"):
        pytest.skip("shared german data not present")
    train, test = _german()
    qids, numeric = ["duration", "age", "purpose", "housing", "job"], ["duration", "age"]
    parties, rel_train, rel_test = _split(train, test, qids, numeric, sizes)
    pooled = evaluate_release(train, test, rel_train, rel_test, "class", qids, numeric)
    federated = evaluate_release_federated(
        parties, "class", qids, numeric, add=lambda v: ring_sum(v).astype(np.int64)
    )
    assert federated == pooled
    assert pooled["BE"] != pooled["UE"]  # the two trees differ: both were really grown


def test_no_feature_left_for_ue_predicts_the_majority() -> None:
    if not has_table("german"):
        pytest.skip("shared german data not present")
    train, test = _german()
    train, test = train[["age", "job", "class"]], test[["age", "job", "class"]]
    qids = ["age", "job"]
    parties, rel_train, rel_test = _split(train, test, qids, ["age"], [300, 300])
    pooled = evaluate_release(train, test, rel_train, rel_test, "class", qids, ["age"])
    assert evaluate_release_federated(parties, "class", qids, ["age"]) == pooled


def test_a_party_release_of_the_wrong_length_is_named() -> None:
    if not has_table("german"):
        pytest.skip("shared german data not present")
    train, test = _german()
    parties, _, _ = _split(train, test, ["age"], ["age"], [300, 300])
    parties[1].released_test = parties[1].released_test.iloc[1:]
    with pytest.raises(FedanonError, match="party 1: released test table has"):
        evaluate_release_federated(parties, "class", ["age"], ["age"])


@pytest.mark.slow
def test_adult_figures_equal_the_pooled_protocol() -> None:
    if not has_table("adult"):
        pytest.skip("shared Adult data not present")
    folder = data_dir() / "adult"
    train, test = pd.read_csv(folder / "adult_train.csv"), pd.read_csv(folder / "adult_test.csv")
    qids = ["age", "education", "martial-status", "occupation", "race", "sex"]
    numeric = ["age"]
    class_col = train.columns[-1]
    parties, rel_train, rel_test = _split(
        train, test, qids, numeric, [5, len(train) // 3, len(train) - len(train) // 3 - 5]
    )
    pooled = evaluate_release(train, test, rel_train, rel_test, class_col, qids, numeric)
    assert evaluate_release_federated(parties, class_col, qids, numeric) == pooled
