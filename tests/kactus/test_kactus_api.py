"""kACTUS end to end: properties on random tables, determinism, and one-line input errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedanon.algorithms.kactus.api import anonymize_kactus, kactus_protocol_table
from fedanon.errors import FedanonError
from fedanon.models.k_anonymity import check_k_anonymity


@st.composite
def tables(draw: st.DrawFn) -> tuple[pd.DataFrame, int]:
    n = draw(st.integers(10, 160))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    colours = draw(st.integers(1, 5))
    df = pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(n)],
            "colour": rng.choice([f"c{i}" for i in range(colours)], n),
            "age": rng.integers(18, 90, n).astype(str),
            "score": np.round(rng.normal(5, 2, n), 1).astype(str),
            "note": rng.choice(["u", "v", "w"], n),
        }
    )
    # the class depends on the QIDs, so the tree has something to split on
    signal = (df["age"].astype(int) > 50) ^ (df["colour"] == "c0")
    noise = rng.random(n) < 0.15
    df["cls"] = np.where(signal ^ noise, "yes", "no")
    if df["cls"].nunique() < 2:
        df.loc[0, "cls"] = "yes" if df.loc[0, "cls"] == "no" else "no"
    if draw(st.booleans()):  # some missing QID values go to the root residual
        holes = rng.random(n) < 0.1
        df.loc[holes, "colour"] = None
    k = draw(st.integers(2, max(2, n // 3)))
    return df, k


QIDS = ["colour", "age", "score"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(0, 1000))
def test_every_release_is_k_anonymous_and_loses_fewer_than_k_records(case, seed):
    df, k = case
    release = anonymize_kactus(df, class_column="cls", qids=QIDS, k=k, seed=seed)
    out = release.table
    assert check_k_anonymity(out, QIDS, k).ok
    assert len(df) - len(out) <= k - 1
    assert release.report["dropped"] == len(df) - len(out)
    # non-QID columns and the class are unchanged for every released record
    merged = out.merge(df, on="id", suffixes=("", "_raw"), validate="one_to_one")
    assert len(merged) == len(out)
    assert (merged["note"] == merged["note_raw"]).all()
    assert (merged["cls"] == merged["cls_raw"]).all()
    assert list(out.columns) == list(df.columns)


@settings(max_examples=25, deadline=None)
@given(tables())
def test_equality_kept_cells_are_the_records_own_values(case):
    df, k = case
    out = anonymize_kactus(df, class_column="cls", qids=QIDS, k=k, seed=3).table
    merged = out.merge(df, on="id", suffixes=("", "_raw"))
    kept = merged["colour"] != "?"
    assert (merged.loc[kept, "colour"] == merged.loc[kept, "colour_raw"]).all()


def _adultish(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n).astype(str),
            "job": rng.choice(["a", "b", "c", "d"], n),
            "city": rng.choice(["x", "y"], n),
            "other": rng.integers(0, 5, n).astype(str),
        }
    )
    df["class"] = np.where((df["age"].astype(int) > 45) | (df["job"] == "a"), ">50K", "<=50K")
    return df


def test_same_seed_same_output_and_rows_are_shuffled():
    df = _adultish()
    a = anonymize_kactus(df, class_column="class", k=10, seed=42).table
    b = anonymize_kactus(df, class_column="class", k=10, seed=42).table
    c = anonymize_kactus(df, class_column="class", k=10, seed=43).table
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    # row order must not follow the input: the 'other' column is not in input order
    assert not (a["other"].to_numpy() == df["other"].to_numpy()[: len(a)]).all()


def test_a_configurable_marker_is_used_for_suppressed_cells():
    out = anonymize_kactus(_adultish(), class_column="class", k=40, seed=1, marker="*").table
    cells = out[["age", "job", "city", "other"]].to_numpy().ravel()
    assert "*" in set(cells) and "?" not in set(cells)


def test_numeric_path_qid_gets_one_value_per_group():
    # one numeric QID that decides the class: every released age is a group value, and records
    # in one group share it
    rng = np.random.default_rng(0)
    ages = rng.integers(20, 70, 300)
    df = pd.DataFrame({"age": ages.astype(str), "class": np.where(ages > 44, "hi", "lo")})
    out = anonymize_kactus(df, class_column="class", k=20, seed=0).table
    low = out.loc[out["class"] == "lo", "age"]
    assert low.nunique() == 1 and 20 <= float(low.iloc[0]) <= 44


def _skewed_groups() -> pd.DataFrame:
    """One numeric QID deciding the class, skewed inside the 'lo' group: 101 records of ages
    20-24 and 50 of age 44 (mean 27.6, median 22), then 150 'hi' records aged 45-69."""
    rng = np.random.default_rng(5)
    low = np.concatenate([rng.integers(20, 25, 101), np.full(50, 44)])
    ages = np.concatenate([low, rng.integers(45, 70, 150)])
    return pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(len(ages))],
            "age": ages.astype(str),
            "class": np.where(ages > 44, "hi", "lo"),
        }
    )


@pytest.mark.parametrize("numeric", ["median", "mean", None])
def test_inequality_tested_qid_gets_one_group_value_median_by_default(numeric):
    df = _skewed_groups()
    low_raw = df.loc[df["class"] == "lo", "age"].astype(float)
    options = {} if numeric is None else {"numeric": numeric}
    release = anonymize_kactus(df, class_column="class", qids=["age"], k=20, seed=0, **options)
    low = release.table.loc[release.table["class"] == "lo", "age"]
    expected = np.mean(low_raw) if numeric == "mean" else np.median(low_raw)
    assert low.nunique() == 1 and len(low) == len(low_raw)
    assert float(low.iloc[0]) == round(expected)
    assert release.report["parameters"]["numeric"] == (numeric or "median")


def test_unknown_numeric_rule_is_a_one_line_error():
    with pytest.raises(FedanonError, match="numeric rule is one of median, mean"):
        anonymize_kactus(_skewed_groups(), class_column="class", k=20, numeric="original")


def test_protocol_table_keeps_tested_values_and_is_no_release():
    """The paper's experimental reading: every tested QID at its original value. Such a table
    is not k-anonymous, and the protocol returns it instead of refusing it."""
    df = _skewed_groups()
    table = kactus_protocol_table(df, class_column="class", qids=["age"], k=20, seed=0)
    merged = table.merge(df, on="id", suffixes=("", "_raw"), validate="one_to_one")
    assert len(merged) == len(df)
    assert (merged["age"] == merged["age_raw"]).all()
    assert not check_k_anonymity(table, ["age"], 20).ok


@pytest.mark.parametrize(
    ("change", "kwargs", "message"),
    [
        (None, {"class_column": "nope"}, "no class column 'nope'"),
        ("constant", {}, "single value"),
        (None, {"k": 1}, "k must be between 2"),
        (None, {"k": 401}, "k must be between 2"),
        (None, {"qids": ["age", "ghost"]}, "no QID column 'ghost'"),
        ("empty_qid", {"qids": ["job", "city"]}, "'city' holds only missing values"),
        (None, {"qids": ["class"]}, "cannot also be a QID"),
    ],
)
def test_bad_input_is_one_line_error(change, kwargs, message):
    df = _adultish()
    if change == "constant":
        df["class"] = "x"
    if change == "empty_qid":
        df["city"] = ""
    args = {"class_column": "class", "k": 5, **kwargs}
    with pytest.raises(FedanonError, match=message) as err:
        anonymize_kactus(df, **args)
    assert "\n" not in str(err.value)
