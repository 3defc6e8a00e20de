"""Python API of kACTUS: DataFrame in, k-anonymous `Release` (table and report) out.

Mirrors ``fedanon anonymize kactus``. No taxonomy is needed: a C4.5-style tree with at least k
records per branch is grown on the QIDs and the class (phase 1), then pruned bottom-up while
the records of complying leaves are released (phase 2). A released record keeps the QID values
its leaf's path tests by equality, gets the group mean for QIDs its path tests only by
inequalities, and the suppression marker for every other QID. The independent k-anonymity
checker verifies the release (``report["privacy_check"]``). See docs/kactus.md.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedanon.algorithms.kactus.phase2 import Group, prune_and_release
from fedanon.algorithms.kactus.tree import induce, place_records
from fedanon.algorithms.tabular import (
    QidColumn,
    checked_release,
    encode_qid,
    generator,
    release_table,
    validate,
)
from fedanon.release import Release


def anonymize_kactus(
    df: pd.DataFrame,
    *,
    class_column: str,
    qids: Sequence[str] | None = None,
    k: int = 50,
    seed: int | None = None,
    marker: str = "?",
    prune: bool = True,
) -> Release:
    """k-anonymize `df` by kACTUS; `qids` defaults to every column but the class.

    ``prune=False`` skips C4.5's pessimistic pruning of the tree (on by default, as in the
    paper). The same `seed` gives the same output; without one the run draws 128 secret bits.
    """
    names = validate(df, class_column, qids, k, marker)
    began = time.perf_counter()
    columns = [encode_qid(df[name], name) for name in names]
    rng = generator(seed)
    labels = df[class_column].astype(str)
    tree = induce(columns, labels, k, prune=bool(prune))
    grown = time.perf_counter()
    root, residual = place_records(tree, columns)
    outcome = prune_and_release(root, residual, k, rng)
    cells = {c.name: _released_cells(c, outcome.groups, marker) for c in columns}
    rows = np.concatenate([g.rows for g in outcome.groups]) if outcome.groups else np.empty(0)
    table = release_table(df, cells, rows.astype(np.intp), rng)
    done = time.perf_counter()
    report = _report(names, k, marker, columns, outcome.groups, cells, table, df)
    report["dropped"] = len(outcome.dropped)
    report["root_residual_from_missing_or_unseen"] = len(residual)
    report["donated"] = outcome.donated
    report["seconds"] = {"tree": round(grown - began, 4), "anonymize": round(done - grown, 4)}
    return checked_release(table, report)


def _released_cells(column: QidColumn, groups: list[Group], marker: str) -> np.ndarray:
    """The column's released text for every record (records not released keep the marker)."""
    out = np.full(len(column.text), marker, dtype=object)
    for group in groups:
        tests = [t for t in group.path if t.feature == column.name]
        if any(t.equality for t in tests):
            out[group.rows] = column.text[group.rows]
        elif tests:
            out[group.rows] = column.format_number(float(np.mean(column.values[group.rows])))
    return out


def _report(
    names: list[str],
    k: int,
    marker: str,
    columns: list[QidColumn],
    groups: list[Group],
    cells: dict[str, np.ndarray],
    table: pd.DataFrame,
    df: pd.DataFrame,
) -> dict[str, Any]:
    released = np.concatenate([g.rows for g in groups]) if groups else np.empty(0, np.intp)
    suppressed: dict[str, int] = {}
    averaged: dict[str, int] = {}
    for column in columns:
        out = cells[column.name][released]
        suppressed[column.name] = int((out == marker).sum())
        averaged[column.name] = int(
            sum(len(g.rows) for g in groups if _only_inequalities(g, column.name))
        )
    sizes = [len(g.rows) for g in groups]
    return {
        "method": "kactus",
        "parameters": {"k": k, "qids": names, "marker": marker},
        "records": len(df),
        "released": len(table),
        "groups": {"count": len(groups), "min_size": min(sizes) if sizes else None},
        "suppressed_cells": suppressed,
        "mean_replaced_cells": averaged,
    }


def _only_inequalities(group: Group, name: str) -> bool:
    tests = [t for t in group.path if t.feature == name]
    return bool(tests) and not any(t.equality for t in tests)
