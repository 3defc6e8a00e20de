"""Python API of kACTUS: DataFrame in, k-anonymous `Release` (table and report) out.

Mirrors ``fedanon anonymize kactus``. No taxonomy is needed: a C4.5-style tree with at least k
records per branch is grown on the QIDs and the class (phase 1), then pruned bottom-up while
the records of complying leaves are released (phase 2). A released record keeps the QID values
its leaf's path tests by equality, gets one value per group for QIDs its path tests only by
inequalities (NUMERIC_RULES: the group median by default, the group mean of the paper's Fig. 6
on request), and the suppression marker for every other QID. The independent k-anonymity
checker verifies the release (``report["privacy_check"]``).

Why the median is the default: a group is a leaf of a tree grown to predict the class, and its
mean on a skewed column (Adult's capital-gain) is a fingerprint of the group that a classifier
trained on the release learns and raw data never shows; the median of such a group is the
typical raw value (0). On Adult at k = 50 the mean collapses C4.5 (62.7 +- 19.9 over 5x2 folds)
and the median does not (docs/kactus.md, docs/reproduction.md).

`kactus_protocol_table` is the paper's *experimental* reading ("some values are converted to
missing values and all others left on their original values"): an evaluation protocol whose
table is not k-anonymous and is never a release.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
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
from fedanon.errors import FedanonError
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
    numeric: str = "median",
) -> Release:
    """k-anonymize `df` by kACTUS; `qids` defaults to every column but the class.

    ``prune=False`` skips C4.5's pessimistic pruning of the tree (on by default, as in the
    paper). `numeric` is the value a group's records get on a QID its path tests only by
    inequalities: "median" (default) or "mean" (the paper's Fig. 6). The same `seed` gives the
    same output; without one the run draws 128 secret bits.
    """
    if numeric not in NUMERIC_RULES:
        raise FedanonError(f"numeric rule is one of {', '.join(NUMERIC_RULES)}, not {numeric!r}")
    table, report = _kactus(df, class_column, qids, k, seed, marker, prune, numeric)
    return checked_release(table, report)


def kactus_protocol_table(
    df: pd.DataFrame,
    *,
    class_column: str,
    qids: Sequence[str] | None = None,
    k: int = 50,
    seed: int | None = None,
    marker: str = "?",
    prune: bool = True,
) -> pd.DataFrame:
    """The training table of the paper's experiments: kACTUS's groups, every QID a group's
    path tests kept at its original value, the others suppressed.

    NOT k-anonymous (raw numbers differ inside a group) and never checked as a release: it
    exists to evaluate classifiers the way the paper's section on experiments describes, which
    reproduces its Adult, German and Pima numbers (docs/reproduction.md).
    """
    return _kactus(df, class_column, qids, k, seed, marker, prune, "original")[0]


NUMERIC_RULES = ("median", "mean")


def _kactus(
    df: pd.DataFrame,
    class_column: str,
    qids: Sequence[str] | None,
    k: int,
    seed: int | None,
    marker: str,
    prune: bool,
    numeric: str,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Phases 1 and 2 and the table of `numeric`'s rule, with its report (unchecked)."""
    names = validate(df, class_column, qids, k, marker)
    began = time.perf_counter()
    columns = [encode_qid(df[name], name) for name in names]
    rng = generator(seed)
    labels = df[class_column].astype(str)
    tree = induce(columns, labels, k, prune=bool(prune))
    grown = time.perf_counter()
    root, residual = place_records(tree, columns)
    outcome = prune_and_release(root, residual, k, rng)
    cells = {c.name: _released_cells(c, outcome.groups, marker, numeric) for c in columns}
    rows = np.concatenate([g.rows for g in outcome.groups]) if outcome.groups else np.empty(0)
    table = release_table(df, cells, rows.astype(np.intp), rng)
    done = time.perf_counter()
    report = _report(names, k, marker, columns, outcome.groups, cells, table, df)
    report["dropped"] = len(outcome.dropped)
    report["root_residual_from_missing_or_unseen"] = len(residual)
    report["donated"] = outcome.donated
    report["parameters"]["numeric"] = numeric
    report["seconds"] = {"tree": round(grown - began, 4), "anonymize": round(done - grown, 4)}
    return table, report


def _group_value(values: np.ndarray, numeric: str) -> float:
    """The one value a group's records get under the rule `numeric` ("median" or "mean")."""
    return float(np.median(values) if numeric == "median" else np.mean(values))


def _released_cells(
    column: QidColumn, groups: list[Group], marker: str, numeric: str
) -> np.ndarray:
    """The column's released text for every record (records not released keep the marker).

    `numeric` decides a QID tested only by inequalities: one group value ("median", "mean"),
    or ("original") every record's own value, the paper's experimental protocol.
    """
    if numeric == "original":
        return released_cells(column, groups, marker, None)
    return released_cells(
        column, groups, marker, lambda _, group: _group_value(column.values[group.rows], numeric)
    )


def released_cells(
    column: QidColumn,
    groups: Sequence[Group],
    marker: str,
    group_value: Callable[[int, Group], float] | None,
) -> np.ndarray:
    """The column's released text for every record: the record's own text where its group's
    path tests the column by equality, ``group_value(i, group)`` where only by inequalities
    (the record's own text when `group_value` is None), the marker otherwise. Federated kACTUS
    passes the group values the secure sums gave."""
    out = np.full(len(column.text), marker, dtype=object)
    for i, group in enumerate(groups):
        tests = [t for t in group.path if t.feature == column.name]
        if any(t.equality for t in tests) or (tests and group_value is None):
            out[group.rows] = column.text[group.rows]
        elif tests:
            assert group_value is not None
            out[group.rows] = column.format_number(group_value(i, group))
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
        "group_value_cells": averaged,
    }


def _only_inequalities(group: Group, name: str) -> bool:
    tests = [t for t in group.path if t.feature == name]
    return bool(tests) and not any(t.equality for t in tests)
