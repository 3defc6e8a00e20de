"""Randomization by breaking attribute links (RA, enhanced RA) and its evaluation.

The release keeps every row, in the same order, and every column; only QID cells are redrawn
from their column's marginal. Its report states the probability Pa that an adversary links a
released record to its original (docs/randomization.md). Randomization has no k-style model
checker: its privacy is Pa, computed from the plan rather than checked on the cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from fedanon.api import Release
from fedanon.errors import FedanonError
from fedanon.public.arguments import column_list, optional_seed, require_frame, require_int


def anonymize_randomize(
    df: pd.DataFrame,
    *,
    qids: Sequence[str],
    method: str = "ra",
    attrs: int | None = None,
    p: str | Sequence[float] = "uniform",
    seed: int | None = None,
) -> Release:
    """RA (one QID per record, chosen with probability p_i) or enhanced RA (`attrs` per record).

    `p` is ``"uniform"``, ``"optimal"`` (maximizes Pa) or one probability per QID. Without
    `seed` the draws come from a generator keyed by `secrets`, so nobody can replay them.
    """
    from fedanon.algorithms.randomization.api import anonymize_randomize as run

    made = run(
        require_frame(df),
        column_list(qids, "qids") or [],
        method,
        None if attrs is None else require_int(attrs, "attrs"),
        _probabilities(p),
        optional_seed(seed),
    )
    return Release(made.table, made.report)


def _probabilities(p: str | Sequence[float]) -> str | tuple[float, ...]:
    if isinstance(p, str):
        return p
    try:
        return tuple(float(x) for x in p)
    except (TypeError, ValueError):
        raise FedanonError(f"p must be uniform, optimal or one number per QID, got {p!r}") from None


def evaluate_randomization(
    df: pd.DataFrame,
    *,
    qids: Sequence[str],
    release: Release | pd.DataFrame | None = None,
    method: str = "ra",
    attrs: int | None = None,
    p: str | Sequence[float] = "uniform",
    seed: int | None = None,
    top: int = 10,
    sensitive: str | None = None,
    queries: int = 1000,
    qd: int = 4,
    s: float = 0.05,
    rules: bool = True,
) -> dict[str, Any]:
    """Pa, changed cells, predicted vs measured bias of frequent QID combinations and, with a
    `sensitive` column, the COUNT-query error; association-rule recovery unless ``rules=False``.

    `release` is a randomized table of `df` made with the same method and parameters (rows in
    the same order); without it one is made here with `seed`.
    """
    from fedanon.algorithms.randomization.api import evaluate_randomization as run

    table = release.table if isinstance(release, Release) else release
    return run(
        require_frame(df),
        column_list(qids, "qids") or [],
        method,
        None if attrs is None else require_int(attrs, "attrs"),
        _probabilities(p),
        optional_seed(seed),
        release=None if table is None else require_frame(table, "release"),
        top=require_int(top, "top"),
        sensitive=sensitive,
        queries=require_int(queries, "queries"),
        qd=require_int(qd, "qd"),
        s=float(s),
        rules=bool(rules),
    )
