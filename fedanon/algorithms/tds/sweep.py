"""The paper's utility protocol over a grid of L and K (Figures 6-8 of the LKC paper).

Every release anonymizes the whole table (training rows first, then test rows, as the paper's
authors did), then a C4.5-style tree is trained on the generalized training rows and tested on
the generalized test rows (CE), against the same tree on raw data (BE) and on raw data without
QIDs (UE). Used by ``fedanon evaluate lkc-sweep`` and by the reproduction tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from fedanon.algorithms.tds.api import anonymize_lkc
from fedanon.errors import FedanonError
from fedanon.models.lkc import check_lkc
from fedanon.schema import LKCParams, Schema
from fedanon.utility.evaluation import baseline_errors, evaluate_release


def numeric_view(table: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The raw table with the numeric QIDs parsed as numbers (what BE and UE train on)."""
    out = table.copy()
    for column in columns:
        out[column] = pd.to_numeric(out[column])
    return out


def sensitive_map(schema: Schema) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s in schema.sensitive:
        out.setdefault(s.column, []).append(s.value)
    return out


def sweep(
    table: pd.DataFrame,
    make_schema: Callable[[], Schema],
    Ls: Sequence[int],
    Ks: Sequence[int],
    C: str,
    train_rows: int,
    score: str = "infogain",
    check: bool = True,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """One row per (L, K): CE, BE, UE, DR, the privacy check and the run time.

    `make_schema` builds a fresh schema per release (dynamic numerical trees grow during a run).
    """
    if not 0 < train_rows < len(table):
        raise FedanonError(f"--train-rows must be between 1 and {len(table) - 1}")
    schema = make_schema()
    if schema.class_column is None:
        raise FedanonError("the utility protocol needs a class column")
    class_column = schema.class_column
    numeric = [t.attribute for t in schema.taxonomies if t.kind == "numeric"]
    raw = numeric_view(table, numeric)
    raw_train, raw_test = raw.iloc[:train_rows], raw.iloc[train_rows:]
    base = baseline_errors(raw_train, raw_test, class_column, schema.qids, numeric)
    rows = []
    for L in Ls:
        for K in Ks:
            schema = make_schema()
            began = time.perf_counter()
            release = anonymize_lkc(table, schema, LKCParams.of(L, K, C), score)
            seconds = time.perf_counter() - began
            released = release.table
            utility = evaluate_release(
                raw_train,
                raw_test,
                released.iloc[:train_rows],
                released.iloc[train_rows:],
                class_column,
                schema.qids,
                numeric,
                baseline=base,
            )
            row: dict[str, Any] = {
                "L": L,
                "K": K,
                "C": C,
                **utility,
                "specializations": release.report["specializations"],
                "seconds": round(seconds, 3),
            }
            if check:
                row["checker_ok"] = check_lkc(
                    released, schema.qids, sensitive_map(schema), L, K, C
                ).ok
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows
