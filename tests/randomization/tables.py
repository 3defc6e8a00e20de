"""Synthetic tables for the randomization tests (correlated QIDs, so biases are not zero)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedanon.readers.datadir import data_dir, have_data


def correlated_table(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Four correlated QIDs (a drives b and c), a sensitive column and an id, as text."""
    rng = np.random.default_rng(seed)
    a = rng.choice(4, size=n, p=[0.5, 0.25, 0.15, 0.10])
    b = np.where(rng.random(n) < 0.7, a % 3, rng.integers(0, 3, n))
    c = np.where(rng.random(n) < 0.6, (a >= 2).astype(int), rng.integers(0, 2, n))
    d = rng.choice(5, size=n, p=[0.3, 0.3, 0.2, 0.1, 0.1])
    return pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(n)],
            "a": [f"a{x}" for x in a],
            "b": [f"b{x}" for x in b],
            "c": [f"c{x}" for x in c],
            "d": [f"d{x}" for x in d],
            "disease": rng.choice(["flu", "hiv", "none"], size=n),
        }
    )


def adult_train() -> pd.DataFrame | None:
    """Adult's 30,162 training rows (the paper's table), or None without the shared data."""
    if not have_data("adult", "adult_train.csv"):
        return None
    from fedanon.readers.table_io import read_table

    return read_table(data_dir() / "adult" / "adult_train.csv")
