"""DRBT: random projection of numeric columns for privacy-preserving clustering.

The `Release` holds the projected table (columns att1..attk, rows shuffled, ids replaced by
random tokens). With an id column, ``tables["id_map"]`` is the token -> id map for the data
owner, who must keep it private: it is the one link back to the people (docs/drbt.md). DRBT
has no k-style model checker; its report states the stress (distance distortion) instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from fedanon.api import Release
from fedanon.public.arguments import column_list, optional_seed, require_frame, require_int


def anonymize_drbt(
    df: pd.DataFrame,
    *,
    k: int,
    matrix: str = "sparse",
    columns: Sequence[str] | None = None,
    id_column: str | None = None,
    seed: int | None = None,
    rescale: bool = False,
) -> Release:
    """Z-score `columns` (default: all but `id_column`), project them to `k` dimensions with a
    secret ``"gaussian"`` or ``"sparse"`` matrix, replace ids by tokens, shuffle the rows.

    `seed` makes the matrix reproducible, and whoever knows it knows the matrix: keep it secret.
    """
    from fedanon.algorithms.drbt.api import anonymize_drbt as run

    made = run(
        require_frame(df),
        require_int(k, "k"),
        matrix,
        columns=column_list(columns, "columns"),
        id_column=id_column,
        seed=optional_seed(seed),
        rescale=bool(rescale),
    )
    tables = {"table": made.table}
    if made.id_map is not None:
        tables["id_map"] = made.id_map
    return Release(made.table, made.report, tables)


def evaluate_drbt(
    df: pd.DataFrame,
    *,
    k: int,
    matrix: str = "sparse",
    columns: Sequence[str] | None = None,
    id_column: str | None = None,
    seed: int | None = None,
    rescale: bool = False,
    clusters: Sequence[int] = (2, 3, 4, 5),
    trials: int = 10,
    projections: int = 5,
    kept_dims: Sequence[int] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The DRBT thesis's utility report: mean stress of `projections` releases per kept
    dimension and the F-measure of K-means on `trials` releases against K-means on the
    original, for each K in `clusters` (docs/drbt.md). Nothing is released.
    """
    from fedanon.algorithms.drbt.api import evaluate_drbt as run

    return run(
        require_frame(df),
        require_int(k, "k"),
        matrix,
        columns=column_list(columns, "columns"),
        id_column=id_column,
        seed=optional_seed(seed),
        rescale=bool(rescale),
        clusters=[require_int(c, "clusters") for c in clusters],
        trials=require_int(trials, "trials"),
        projections=require_int(projections, "projections"),
        kept_dims=None if kept_dims is None else [require_int(d, "kept_dims") for d in kept_dims],
        on_step=on_step,
    )
