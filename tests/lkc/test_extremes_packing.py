"""Report extremes sum several count columns per bincount; the sums must stay exact.

Group sizes and sensitive counts are packed into float64 weights, as many columns per weight as
keep a group's packed sum below 2^52. Large counts (many bits per column) force one column per
weight, small ones share: both must give the extremes a plain group-by gives.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.tds.validity import Validator
from fedanon.schema import LKCParams


def _by_group_by(keys: np.ndarray, own: np.ndarray, L: int) -> tuple[int, list[float]]:
    """Min size and max confidence per sensitive column over every L-subset, by pandas."""
    frame = pd.DataFrame(keys, columns=[f"q{i}" for i in range(keys.shape[1])])
    names = ["size"] + [f"s{j}" for j in range(own.shape[1] - 1)]
    for i, name in enumerate(names):
        frame[name] = own[:, i]
    min_size, max_conf = None, [0.0] * (own.shape[1] - 1)
    for subset in combinations(frame.columns[: keys.shape[1]], L):
        groups = frame.groupby(list(subset))[names].sum()
        smallest = int(groups["size"].min())
        min_size = smallest if min_size is None else min(min_size, smallest)
        for j in range(len(max_conf)):
            share = (groups[f"s{j}"] / groups["size"]).max()
            max_conf[j] = max(max_conf[j], float(share))
    assert min_size is not None
    return min_size, max_conf


@pytest.mark.parametrize("scale", [1, 1 << 24], ids=["shared-weights", "one-column-each"])
def test_packed_extremes_equal_a_plain_group_by(scale: int) -> None:
    rng = np.random.default_rng(7)
    n_parts, n_qids, n_sensitive = 400, 5, 3
    keys = rng.integers(0, 4, (n_parts, n_qids))
    size = rng.integers(1, 50, n_parts) * scale
    sens = np.stack([rng.integers(0, s + 1) for s in size for _ in range(n_sensitive)])
    own = np.column_stack([size, sens.reshape(n_parts, n_sensitive)]).astype(np.int64)
    validator = Validator(n_qids, LKCParams.of(3, 1, 1), 0, n_sensitive)
    extremes = validator.group_extremes(keys, own)
    min_size, max_conf = _by_group_by(keys, own, 3)
    assert extremes.min_size == min_size
    assert extremes.max_confidence == pytest.approx(max_conf, rel=1e-12)
