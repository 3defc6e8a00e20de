"""DRBT on tables: the Python API behind `fedanon anonymize drbt` and `fedanon evaluate drbt`.

A DataFrame goes in (cells as read by `fedanon.readers.table_io`, text or numbers); a `Release`
comes out: the projected table, the report and, with an id column, ``tables["id_map"]``, the
owner's token -> id map. The projection matrix lives only inside
`project_block`. Object ids are replaced by fresh random tokens from `secrets` and the rows are
shuffled, so neither an id nor the input's row order links a released row to a person; the
token -> id map is returned separately for the data owner, who must keep it private.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedanon.algorithms.drbt.matrices import secure_rng
from fedanon.algorithms.drbt.projection import check_projection, project_block, zscore
from fedanon.algorithms.drbt.protocol import STARTS, f_measure_trials, stress_curve
from fedanon.algorithms.drbt.stress import DEFAULT_MAX_PAIRS, expected_stress, stress
from fedanon.arguments import column_list, optional_seed, require_frame, require_int
from fedanon.errors import FedanonError, MissingColumnError
from fedanon.keywords import renamed_keywords
from fedanon.release import Release

TOKEN_BYTES = 8  # 64-bit tokens: collisions are redrawn, guessing one is hopeless


def clustering_columns(
    table: pd.DataFrame, columns: Sequence[str] | None, id_column: str | None, source: str
) -> list[str]:
    """The attributes to project: `columns`, or every column except the id column."""
    if id_column is not None and id_column not in table.columns:
        raise FedanonError(f"{source}: no id column '{id_column}'")
    chosen = list(columns) if columns else [c for c in table.columns if c != id_column]
    for column in chosen:
        if column not in table.columns:
            raise MissingColumnError(f"{source}: no column '{column}'")
        if column == id_column:
            raise FedanonError(f"{source}: the id column '{column}' cannot be projected")
    if len(set(chosen)) != len(chosen):
        raise FedanonError(f"{source}: a column is listed twice in {chosen}")
    return chosen


def numeric_block(table: pd.DataFrame, columns: Sequence[str], source: str) -> np.ndarray:
    """The columns as an m x d float matrix; the first non-numeric cell is named by row/column."""
    block = np.empty((len(table), len(columns)))
    for j, column in enumerate(columns):
        values = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            row = int(bad[0])
            raise FedanonError(
                f"{source}: column '{column}', data row {row + 1}: "
                f"'{table[column].iloc[row]}' is not a finite number"
            )
        block[:, j] = values
    return block


@renamed_keywords(k="n_components")
def anonymize_drbt(
    df: pd.DataFrame,
    *,
    n_components: int,
    matrix: str = "sparse",
    columns: Sequence[str] | None = None,
    id_column: str | None = None,
    seed: int | None = None,
    rescale: bool = False,
    source: str = "input",
) -> Release:
    """Release `df` as its z-scored columns projected to `n_components` dimensions (att1..attk).

    `matrix` is ``"gaussian"`` (RP1) or ``"sparse"`` (RP2); `columns` default to all but the
    id column. `seed` makes the matrix and the row order reproducible (and is then as secret as
    R); without it both come from `secrets`. Tokens are always fresh. `source` names the input
    in error messages.
    """
    table, k = require_frame(df), require_int(n_components, "n_components")
    names = clustering_columns(table, column_list(columns, "columns"), id_column, source)
    check_projection(len(names), k, matrix)
    z = zscore(numeric_block(table, names, source), names)
    rng = _rng(optional_seed(seed))
    released = project_block(z, k, matrix, rng, rescale=rescale)
    order = rng.permutation(len(table))
    out = pd.DataFrame(released[order], columns=[f"att{i + 1}" for i in range(k)])
    tables = {"table": out}
    if id_column is not None:
        tokens = opaque_tokens(len(table))
        out.insert(0, id_column, tokens)
        ids = table[id_column].to_numpy()[order]
        tables["id_map"] = pd.DataFrame({"token": tokens, id_column: ids})
    check = stress(z, released, rng)
    report = {
        "method": "drbt",
        "records": len(table),
        "columns": names,
        "d": len(names),
        "k": k,
        "matrix": matrix,
        "rescaled": rescale,
        "seeded": seed is not None,
        "id_column": id_column,
        "stress": check.value,
        "stress_pairs": check.pairs,
        "stress_exact": check.exact,
        "expected_stress": None if rescale else expected_stress(len(names), k),
    }
    return Release(out, report, tables)


@renamed_keywords(k="n_components")
def evaluate_drbt(
    df: pd.DataFrame,
    *,
    n_components: int,
    matrix: str = "sparse",
    columns: Sequence[str] | None = None,
    id_column: str | None = None,
    seed: int | None = None,
    rescale: bool = False,
    clusters: Sequence[int] = (2, 3, 4, 5),
    trials: int = 10,
    projections: int = 5,
    kept_dims: Sequence[int] | None = None,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    starts: str = "paired",
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The thesis's utility report: stress per kept dimension and F-measure per K (see protocol).

    `starts` says how the K-means runs on the original and on the release start ("paired":
    from the same rows, the default; "independent"). Nothing is released: the original table
    is needed to compare against.
    """
    source = "input"
    table, k = require_frame(df), require_int(n_components, "n_components")
    names = clustering_columns(table, column_list(columns, "columns"), id_column, source)
    d = len(names)
    check_projection(d, k, matrix)
    trials, projections = require_int(trials, "trials"), require_int(projections, "projections")
    clusters = [require_int(c, "clusters") for c in clusters]
    if trials < 1 or projections < 1:
        raise FedanonError("trials and projections must be at least 1")
    if starts not in STARTS:
        raise FedanonError(f"unknown starts '{starts}' (expected one of {', '.join(STARTS)})")
    if not clusters or any(c < 2 or c > len(table) for c in clusters):
        raise FedanonError(f"every K must be in 2..{len(table)} (the number of rows)")
    dims = sorted(set(kept_dims) if kept_dims else set(default_kept_dims(d)) | {k}, reverse=True)
    for kept in dims:
        check_projection(d, kept, matrix)
    z = zscore(numeric_block(table, names, source), names)
    rng = _rng(optional_seed(seed))
    step = on_step or (lambda _text: None)
    step("stress")
    curve = stress_curve(
        z, dims, matrix, rng, projections=projections, rescale=rescale, max_pairs=max_pairs
    )
    step("F-measure")
    scores = f_measure_trials(
        z, k, matrix, clusters, rng, trials=trials, rescale=rescale, starts=starts
    )
    return {
        "method": "drbt",
        "records": len(table),
        "columns": names,
        "d": d,
        "k": k,
        "matrix": matrix,
        "rescaled": rescale,
        "seeded": seed is not None,
        "stress": {
            "projections": projections,
            "curve": [
                {
                    "kept": p.kept,
                    **p.summary.as_dict(),
                    "pairs": p.pairs,
                    "exact": p.exact,
                    "expected": None if rescale else expected_stress(d, p.kept),
                }
                for p in curve
            ],
        },
        "f_measure": {
            "trials": trials,
            "kept": k,
            "starts": starts,
            "by_clusters": [{"K": c, **s.as_dict()} for c, s in scores.items()],
        },
    }


def default_kept_dims(d: int) -> list[int]:
    """Six kept dimensions from d - 1 down to about d/3, like the thesis's stress tables."""
    low = max(1, d // 3)
    return sorted({int(v) for v in np.round(np.linspace(d - 1, low, 6))}, reverse=True)


def opaque_tokens(count: int) -> list[str]:
    """`count` distinct random hex tokens from `secrets` (no relation to the original ids)."""
    tokens: list[str] = []
    seen: set[str] = set()
    while len(tokens) < count:
        token = secrets.token_hex(TOKEN_BYTES)
        if token not in seen:
            seen.add(token)
            tokens.append(token)
    return tokens


def _rng(seed: int | None) -> np.random.Generator:
    try:
        return secure_rng(seed)
    except ValueError as exc:
        raise FedanonError(str(exc)) from exc
