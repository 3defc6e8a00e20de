"""The table-level API: the release, its tokens and private id map, errors, the evaluation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.drbt.api import (
    anonymize_drbt,
    default_kept_dims,
    evaluate_drbt,
    opaque_tokens,
)
from fedanon.algorithms.drbt.projection import zscore
from fedanon.algorithms.drbt.stress import stress
from fedanon.errors import FedanonError


def _patients(rows: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "pid": [f"P{i:03d}" for i in range(rows)],
            "age": rng.integers(20, 90, rows).astype(str),  # text, as read_table gives it
            "weight": rng.normal(75, 12, rows).round(1),
            "h_rate": rng.normal(70, 9, rows).round(),
            "qrs": rng.normal(90, 10, rows).round(),
            "note": ["x"] * rows,
        }
    )


COLUMNS = ["age", "weight", "h_rate", "qrs"]


def test_release_replaces_ids_and_keeps_a_private_map() -> None:
    table = _patients()
    release = anonymize_drbt(
        table, n_components=2, matrix="gaussian", columns=COLUMNS, id_column="pid"
    )
    out = release.table
    assert list(out.columns) == ["pid", "att1", "att2"]
    assert out["pid"].is_unique and not set(out["pid"]) & set(table["pid"])
    assert out["pid"].str.fullmatch(r"[0-9a-f]{16}").all()
    # The map sends each token to its row's original id: the released rows, put back in the
    # original order through it, have the stress the report states against the z-scored input.
    assert "id_map" in release.tables
    original_row = (
        release.tables["id_map"].set_index("token").loc[out["pid"], "pid"].str[1:].astype(int)
    )
    z = zscore(table[COLUMNS].astype(float).to_numpy())
    released = out[["att1", "att2"]].to_numpy()
    assert stress(z[original_row.to_numpy()], released).value == pytest.approx(
        release.report["stress"]
    )
    # ... and the rows are shuffled (60! orders: the identity is no accident).
    assert not (original_row.to_numpy() == np.arange(60)).all()
    assert release.report["d"] == 4 and release.report["k"] == 2


def _values(release: Any) -> np.ndarray:
    """The released values as a multiset of rows (the row order is shuffled)."""
    block = release.table.drop(columns="pid").to_numpy()
    return block[np.lexsort(block.T[::-1])]


@pytest.mark.parametrize("matrix", ["sparse", "gaussian"])
def test_seed_reproduces_values_but_not_tokens(matrix: str) -> None:
    table = _patients()
    options: dict[str, Any] = {"n_components": 3, "columns": COLUMNS, "id_column": "pid"}
    a = anonymize_drbt(table, matrix=matrix, seed=11, **options)
    b = anonymize_drbt(table, matrix=matrix, seed=11, **options)
    pd.testing.assert_frame_equal(a.table.drop(columns="pid"), b.table.drop(columns="pid"))
    assert not set(a.table["pid"]) & set(b.table["pid"])
    # Without a seed R comes from `secrets`. A sparse R has a small discrete support (entries
    # in {-sqrt 3, 0, sqrt 3}), so one fresh column equals the seeded one in about 3 % of the
    # draws (the flake of session 8): compare whole releases, two of them (about 1e-9 together
    # for sparse, never for gaussian).
    fresh = [anonymize_drbt(table, matrix=matrix, **options) for _ in range(2)]
    assert any(not np.allclose(_values(a), _values(c)) for c in fresh)


def test_without_ids_there_is_no_id_column_and_no_map() -> None:
    release = anonymize_drbt(_patients(), n_components=2, columns=COLUMNS)
    assert list(release.table.columns) == ["att1", "att2"] and "id_map" not in release.tables


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"columns": ["age", "qrs", "note"]},
            r"column 'note', data row 1: 'x' is not a finite number",
        ),
        ({"columns": ["age", "height"]}, "no column 'height'"),
        ({"columns": ["age", "pid"], "id_column": "pid"}, "id column 'pid' cannot be projected"),
        ({"columns": ["age", "age"]}, "listed twice"),
        ({"columns": ["age", "weight"], "id_column": "nhs"}, "no id column 'nhs'"),
        ({"columns": ["age", "weight"]}, "rotation, not a reduction"),
        ({"columns": ["age", "weight", "qrs"], "seed": -3}, "non-negative"),
    ],
)
def test_input_errors_name_what_is_wrong(kwargs: dict, message: str) -> None:
    with pytest.raises(FedanonError, match=message):
        anonymize_drbt(_patients(), n_components=2, source="patients.csv", **kwargs)


def test_constant_column_names_the_column() -> None:
    table = _patients().assign(ward="7")
    with pytest.raises(FedanonError, match="column 'ward' is constant"):
        anonymize_drbt(table, n_components=2, columns=["age", "weight", "ward"])


def test_evaluate_report() -> None:
    arguments: dict[str, Any] = {
        "columns": COLUMNS,
        "seed": 5,
        "clusters": (2, 3),
        "trials": 4,
        "projections": 3,
    }
    report = evaluate_drbt(_patients(), n_components=3, matrix="sparse", **arguments)
    assert [p["kept"] for p in report["stress"]["curve"]] == [3, 2, 1]
    assert all(len(p["values"]) == 3 and p["exact"] for p in report["stress"]["curve"])
    assert [s["K"] for s in report["f_measure"]["by_clusters"]] == [2, 3]
    assert all(
        0 < s["min"] <= s["mean"] <= s["max"] <= 1 for s in report["f_measure"]["by_clusters"]
    )
    again = evaluate_drbt(_patients(), n_components=3, matrix="sparse", **arguments)
    assert again == report
    assert report["f_measure"]["starts"] == "paired"
    with pytest.raises(FedanonError, match="every K"):
        evaluate_drbt(_patients(), n_components=3, columns=COLUMNS, clusters=(1,))
    with pytest.raises(FedanonError, match="unknown starts 'shared'"):
        evaluate_drbt(_patients(), n_components=3, columns=COLUMNS, starts="shared")


def test_default_kept_dims_and_tokens() -> None:
    assert default_kept_dims(37) == [36, 31, 26, 22, 17, 12]
    assert default_kept_dims(4) == [3, 2, 1]
    tokens = opaque_tokens(1000)
    assert len(set(tokens)) == 1000
