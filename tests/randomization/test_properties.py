"""Invariants of every release, on tables drawn by hypothesis."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from fedanon.algorithms.randomization.api import anonymize_randomize
from fedanon.algorithms.randomization.coding import decode, encode


@st.composite
def tables(draw):
    m = draw(st.integers(1, 4))
    n = draw(st.integers(2, 40))
    columns = {}
    for i in range(m):
        values = draw(
            st.lists(
                st.sampled_from(["x", "y", "z", "1", "1.0", ""]), min_size=n, max_size=n
            ).filter(lambda v: len(set(v)) >= 2)
        )
        columns[f"q{i}"] = values
    columns["other"] = [f"row{r}" for r in range(n)]
    return pd.DataFrame(columns), [f"q{i}" for i in range(m)]


@settings(max_examples=60, deadline=None)
@given(tables(), st.integers(0, 2**32), st.data())
def test_release_invariants(case, seed, data):
    table, qids = case
    method = data.draw(st.sampled_from(["ra", "enhanced"]))
    k = data.draw(st.integers(1, len(qids))) if method == "enhanced" else None
    out = anonymize_randomize(table, qids=qids, method=method, attrs=k, seed=seed).table
    assert out.shape == table.shape and list(out["other"]) == list(table["other"])
    changed = (out[qids].to_numpy() != table[qids].to_numpy()).sum(axis=1)
    assert changed.max() <= (k or 1)
    for q in qids:
        assert set(out[q]) <= set(table[q])


@settings(max_examples=60, deadline=None)
@given(tables())
def test_encode_decode_round_trip(case):
    table, qids = case
    coded = encode(table, qids)
    pd.testing.assert_frame_equal(decode(table, coded, coded.codes), table)
    for i, q in enumerate(qids):
        assert list(coded.domains[i]) == sorted(set(table[q]))
        np.testing.assert_array_equal(
            np.bincount(coded.codes[:, i]), [list(table[q]).count(v) for v in coded.domains[i]]
        )
