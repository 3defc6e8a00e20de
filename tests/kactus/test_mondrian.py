"""Mondrian: median cuts on hand-made tables, properties on random ones, input errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedanon.algorithms.mondrian.api import anonymize_mondrian
from fedanon.errors import FedanonError
from fedanon.models.k_anonymity import check_k_anonymity


def test_median_cuts_on_one_numeric_qid():
    df = pd.DataFrame({"x": [str(v) for v in range(1, 9)], "c": list("abababab")})
    out = anonymize_mondrian(df, class_column="c", k=2, seed=0).table
    assert sorted(out["x"].unique()) == ["[1, 2]", "[3, 4]", "[5, 6]", "[7, 8]"]


def test_ties_at_the_median_cut_below_it():
    # 1,1,1,1,1,2,3,4 with k=3: "<= 1" leaves 3 on the right, fine; then {2,3,4} stays
    df = pd.DataFrame({"x": ["1"] * 5 + ["2", "3", "4"], "c": list("abababab")})
    out = anonymize_mondrian(df, class_column="c", k=3, seed=0).table
    assert sorted(out["x"].value_counts().items()) == [("1", 5), ("[2, 4]", 3)]


def test_unordered_categories_keep_a_single_value_or_are_suppressed():
    df = pd.DataFrame({"g": ["a", "a", "b", "b", "c", "c", "d"], "c": list("xyxyxyx")})
    out = anonymize_mondrian(df, class_column="c", k=3, seed=0).table
    # lexicographic positions a,a,b,b | c,c,d: each half holds two values -> marker
    assert set(out["g"]) == {"?"}
    out = anonymize_mondrian(df, class_column="c", k=2, seed=0).table
    assert sorted(out["g"].value_counts().items()) == [("?", 3), ("a", 2), ("b", 2)]


def test_ordered_categories_are_released_as_ranges_of_the_order():
    order = ["low", "mid", "high", "top"]
    df = pd.DataFrame({"lvl": ["top", "low", "mid", "high"] * 2, "c": list("xyxyxyxy")})
    out = anonymize_mondrian(df, class_column="c", k=4, seed=0, orders={"lvl": order}).table
    assert sorted(out["lvl"].unique()) == ["[high, top]", "[low, mid]"]


def test_records_with_missing_qids_are_set_aside():
    df = pd.DataFrame({"x": ["1", "2", "3", "4", "", ""], "c": list("xyxyxy")})
    release = anonymize_mondrian(df, class_column="c", k=3, seed=0)
    assert release.report["dropped"] == 2 and len(release.table) == 4


@settings(max_examples=50, deadline=None)
@given(st.integers(6, 150), st.integers(0, 2**32 - 1), st.data())
def test_every_release_is_k_anonymous(n, seed, data):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(n)],
            "age": rng.integers(18, 90, n).astype(str),
            "job": rng.choice(list("abcde"), n),
            "w": np.round(rng.random(n) * 10, 2).astype(str),
            "note": rng.choice(["u", "v"], n),
            "cls": rng.choice(["yes", "no"], n),
        }
    )
    if df["cls"].nunique() < 2:
        df.loc[0, "cls"] = "yes" if df.loc[0, "cls"] == "no" else "no"
    k = data.draw(st.integers(2, max(2, n // 2)))
    qids = ["age", "job", "w"]
    out = anonymize_mondrian(df, class_column="cls", qids=qids, k=k, seed=seed).table
    assert check_k_anonymity(out, qids, k).ok
    assert len(out) == n  # no missing values: nothing is dropped
    merged = out.merge(df, on="id", suffixes=("", "_raw"), validate="one_to_one")
    assert (merged["note"] == merged["note_raw"]).all()
    assert (merged["cls"] == merged["cls_raw"]).all()


def test_value_outside_the_given_order_is_an_error():
    df = pd.DataFrame({"lvl": ["low", "odd"] * 3, "c": list("xyxyxy")})
    with pytest.raises(FedanonError, match="'odd' is not in its order"):
        anonymize_mondrian(df, class_column="c", k=2, orders={"lvl": ["low", "high"]})


def test_k_above_the_number_of_records_is_an_error():
    df = pd.DataFrame({"x": ["1", "2"], "c": ["a", "b"]})
    with pytest.raises(FedanonError, match="k must be between 2"):
        anonymize_mondrian(df, class_column="c", k=3)


def test_cut_attribute_is_the_widest_relative_to_the_whole_table():
    # b spans 0..1000 and a 0..10 over the table. The root cut is on b (both relative widths
    # are 1; b comes first), at its median 300. In the lower half {0, 100, 200, 300} b spans
    # 300 of 1000 (0.3) but a spans its whole range (1.0): the cut is on a, although b is the
    # wider in raw units. The upper half has a constant a and is cut on b at 800.
    df = pd.DataFrame(
        {
            "b": ["0", "100", "200", "300", "700", "800", "900", "1000"],
            "a": ["0", "10", "0", "10", "0", "0", "0", "0"],
            "c": list("xyxyxyxy"),
        }
    )
    out = anonymize_mondrian(df, class_column="c", qids=["b", "a"], k=2, seed=0).table
    assert sorted(zip(out["b"], out["a"], strict=True)) == sorted(
        [
            ("[0, 200]", "0"),
            ("[0, 200]", "0"),
            ("[100, 300]", "10"),
            ("[100, 300]", "10"),
            ("[700, 800]", "0"),
            ("[700, 800]", "0"),
            ("[900, 1000]", "0"),
            ("[900, 1000]", "0"),
        ]
    )


def test_exactly_k_records_with_missing_qids_are_released_suppressed():
    df = pd.DataFrame({"x": ["1", "2", "3", "4", "", ""], "c": list("ababab")})
    release = anonymize_mondrian(df, class_column="c", k=2, seed=0)
    out = release.table
    assert len(out) == 6 and release.report["dropped"] == 0
    assert sorted(out["x"]) == ["?", "?", "[1, 2]", "[1, 2]", "[3, 4]", "[3, 4]"]
