"""Python API of Mondrian (LeFevre, DeWitt, Ramakrishnan 2006), strict multidimensional.

The baseline kACTUS is compared with, released with the same conventions (same columns, QID
cells as text, the same suppression marker, shuffled rows; see fedanon/algorithms/tabular.py).

- Every QID is mapped to numbers: numeric QIDs are their values, ordered categorical QIDs
  (``orders``) the position of their value in the given order, and categorical QIDs without an
  order the position of their value in sorted (lexicographic) order. That last encoding is our
  choice where the Mondrian paper assumes a hierarchy or an order: it makes median cuts
  possible on any column without a taxonomy, as kACTUS needs none.
- A partition is cut on the QID with the widest range relative to the whole table; the cut is
  at the median value (``<= median`` / ``> median``, else ``< median`` / ``>= median`` when the
  ties put fewer than k records on one side). If no QID allows a cut with at least k records
  on each side, the partition is final.
- Release: a numeric QID holds ``[lo, hi]`` (at the column's precision) or the value when the
  partition holds one; an ordered categorical QID ``[first, last]`` or the value; a categorical
  QID without an order keeps its value when the partition holds one, else the suppression
  marker (a range of lexicographic positions means nothing to a reader).
- Records with a missing QID value are set aside and released with every QID suppressed when
  there are at least k of them, otherwise dropped (the kACTUS convention).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedanon.algorithms.tabular import (
    QidColumn,
    checked_release,
    encode_qid,
    generator,
    release_table,
    validate,
)
from fedanon.arguments import column_list
from fedanon.errors import FedanonError
from fedanon.release import Release


def anonymize_mondrian(
    df: pd.DataFrame,
    *,
    class_column: str,
    qids: Sequence[str] | None = None,
    k: int = 50,
    seed: int | None = None,
    marker: str = "?",
    orders: Mapping[str, Sequence[str]] | None = None,
) -> Release:
    """k-anonymize `df` by strict Mondrian; `qids` defaults to every column but the class.

    The class is never a QID and never changes; `orders` gives the value order of ordered
    categorical QIDs. `seed` only shuffles the output rows (the partitioning is deterministic).
    The independent k-anonymity checker verifies the release (``report["privacy_check"]``).
    """
    names = validate(df, class_column, qids, k, marker)
    if orders is not None and not isinstance(orders, Mapping):
        raise FedanonError(f"orders must be a mapping column -> values, got {orders!r}")
    order_of = {
        c: column_list(v, f"orders[{c!r}]", "values") or [] for c, v in (orders or {}).items()
    }
    unknown = sorted(set(order_of) - set(names))
    if unknown:
        raise FedanonError(f"an order is given for '{unknown[0]}', which is not a QID")
    began = time.perf_counter()
    columns = [encode_qid(df[name], name) for name in names]
    ranks = np.column_stack([_ranks(c, order_of.get(c.name)) for c in columns])
    complete = ~np.isnan(ranks).any(axis=1)
    partitions = _partition(ranks, np.flatnonzero(complete), k)
    residual = np.flatnonzero(~complete)
    dropped = 0
    if len(residual) >= k:
        partitions.append(residual)
    else:
        dropped = len(residual)
    cut = time.perf_counter()
    cells = {
        c.name: _released_cells(c, ranks[:, j], partitions, order_of.get(c.name), marker)
        for j, c in enumerate(columns)
    }
    rows = np.concatenate(partitions) if partitions else np.empty(0, dtype=np.intp)
    table = release_table(df, cells, rows.astype(np.intp), generator(seed))
    done = time.perf_counter()
    sizes = [len(p) for p in partitions]
    report: dict[str, Any] = {
        "method": "mondrian",
        "parameters": {"k": k, "qids": names, "marker": marker, "ordered": sorted(order_of)},
        "records": len(df),
        "released": len(table),
        "dropped": dropped,
        "groups": {"count": len(partitions), "min_size": min(sizes) if sizes else None},
        "suppressed_cells": {c.name: int((cells[c.name][rows] == marker).sum()) for c in columns},
        "range_cells": {
            c.name: int(pd.Series(cells[c.name][rows]).str.startswith("[").sum()) for c in columns
        },
        "seconds": {"partition": round(cut - began, 4), "release": round(done - cut, 4)},
    }
    return checked_release(table, report)


def _ranks(column: QidColumn, order: Sequence[str] | None) -> np.ndarray:
    """The column as numbers for median cuts (NaN when missing)."""
    if column.numeric and order is None:
        return column.values
    if order is not None:
        position = {str(v): i for i, v in enumerate(order)}
        present = column.text[~column.missing]
        absent = sorted(set(present) - set(position))
        if absent:
            raise FedanonError(f"QID '{column.name}': value '{absent[0]}' is not in its order")
        out = np.full(len(column.text), np.nan)
        out[~column.missing] = [position[t] for t in present]
        return out
    return np.where(column.codes < 0, np.nan, column.codes.astype(np.float64))


def _partition(ranks: np.ndarray, rows: np.ndarray, k: int) -> list[np.ndarray]:
    """Strict Mondrian: cut at medians until no allowable cut is left (iterative)."""
    if len(rows) == 0:
        return []
    span = np.nanmax(ranks, axis=0) - np.nanmin(ranks, axis=0)  # the whole table's ranges
    span = np.where(span > 0, span, 1.0)
    final: list[np.ndarray] = []
    stack = [rows]
    while stack:
        part = stack.pop()
        halves = _cut(ranks[part], k, span) if len(part) >= 2 * k else None
        if halves is None:
            final.append(part)
            continue
        stack.extend(part[h] for h in halves)
    return final


def _cut(values: np.ndarray, k: int, span: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Masks of an allowable median cut on the widest QID that has one, or None."""
    width = (values.max(axis=0) - values.min(axis=0)) / span
    for j in np.argsort(-width, kind="stable"):
        if width[j] <= 0:
            return None
        x = values[:, j]
        median = np.partition(x, (len(x) - 1) // 2)[(len(x) - 1) // 2]
        for left in (x <= median, x < median):
            n_left = int(left.sum())
            if k <= n_left <= len(x) - k:
                return left, ~left
    return None


def _released_cells(
    column: QidColumn,
    ranks: np.ndarray,
    partitions: list[np.ndarray],
    order: Sequence[str] | None,
    marker: str,
) -> np.ndarray:
    out = np.full(len(column.text), marker, dtype=object)
    for part in partitions:
        x = ranks[part]
        if np.isnan(x).any():  # the residual of records with missing values
            continue
        lo, hi = x.min(), x.max()
        if order is not None:
            first, last = str(order[int(lo)]), str(order[int(hi)])
            out[part] = first if lo == hi else f"[{first}, {last}]"
        elif column.numeric:
            low, high = column.format_number(lo), column.format_number(hi)
            out[part] = low if low == high else f"[{low}, {high}]"
        elif lo == hi:
            out[part] = column.categories[int(lo)]
    return out
