"""Assertions shared by the in-process and the real-daemon tests of vertical DRBT."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from fedanon.algorithms.drbt.fmeasure import overall_f_measure
from fedanon.algorithms.drbt.kmeans import kmeans
from tests.drbt_vertical.harness import default_k, zscore_population

TOKEN = re.compile(r"[0-9a-f]{16}")


def expected_dimensions(d: int, parties: int) -> int:
    """sum of k_i = ceil(d_i / 2) over split_columns' contiguous near-equal blocks."""
    return sum(default_k(len(b)) for b in np.array_split(np.arange(d), parties))


def read_release(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"token": str})


def check_release(
    path: Path, table: pd.DataFrame, id_column: str, parties: int, clusters: int
) -> pd.DataFrame:
    """m rows; token, p1..p{sum k_i}, cluster; tokens opaque; labels in 0..K-1."""
    release = read_release(path)
    d = table.shape[1] - 1
    k_sum = expected_dimensions(d, parties)
    assert len(release) == len(table)
    assert list(release.columns) == ["token", *[f"p{i + 1}" for i in range(k_sum)], "cluster"]
    tokens = release["token"].astype(str)
    assert tokens.map(lambda t: TOKEN.fullmatch(t) is not None).all()
    assert tokens.is_unique
    ids = set(table[id_column].astype(str))
    assert not ids & set(tokens), "a token equals an object id"
    assert not any(i in t for t in tokens for i in list(ids)[:50] if len(i) > 3)
    assert np.isfinite(release.iloc[:, 1:-1].to_numpy(dtype=float)).all()
    assert set(release["cluster"]) <= set(range(clusters))
    return release


def centralized_reference(
    table: pd.DataFrame, id_column: str, clusters: int, seed: int = 0
) -> np.ndarray:
    """K-means (10 restarts) on the z-scored original attributes."""
    original = table.drop(columns=[id_column]).to_numpy(dtype=float)
    return kmeans(
        zscore_population(original), clusters, np.random.default_rng(seed), n_init=10
    ).labels


def check_assignments(
    directories: list[Path],
    table: pd.DataFrame,
    id_column: str,
    release: pd.DataFrame,
    truth: np.ndarray,
) -> pd.Series:
    """Each party wrote one (id, cluster) file for every object; the same labels everywhere,
    the same partition sizes as the release, and the true clusters recovered.

    Returns the leader's labels by object id (what every party received).
    """
    frames = []
    for directory in directories:
        files = sorted(directory.glob("drbt-clusters-*.csv"))
        assert len(files) == 1, f"{directory}: {files}"
        frame = pd.read_csv(files[0], dtype={id_column: str})
        assert list(frame.columns) == [id_column, "cluster"]
        assert sorted(frame[id_column]) == sorted(table[id_column].astype(str))
        frames.append(frame.set_index(id_column)["cluster"])
    first = frames[0]
    for other in frames[1:]:
        assert other.loc[first.index].tolist() == first.tolist()
    assert sorted(np.bincount(first.to_numpy())) == sorted(
        np.bincount(release["cluster"].to_numpy())
    )
    true_of = dict(zip(table[id_column].astype(str), truth, strict=True))
    assert overall_f_measure(np.array([true_of[i] for i in first.index]), first.to_numpy()) > 0.9
    return first


def f_vs_centralized(
    labels: pd.Series, table: pd.DataFrame, id_column: str, clusters: int
) -> float:
    """Overall F of the leader's labels (by id) against K-means on the original table.

    Linked by id, not by release row: the release's row order carries no promise.
    """
    reference = pd.Series(
        centralized_reference(table, id_column, clusters), index=table[id_column].astype(str)
    )
    return overall_f_measure(reference.loc[labels.index].to_numpy(), labels.to_numpy())


def joined_matches(release: pd.DataFrame, expected: np.ndarray) -> None:
    """The release's p-columns are the rows of `expected`, in any row order."""
    got = release.filter(regex=r"^p\d+$").to_numpy(dtype=float)
    assert got.shape == expected.shape
    a = got[np.lexsort(got.T[::-1])]
    b = expected[np.lexsort(expected.T[::-1])]
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
