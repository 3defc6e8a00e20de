"""Input checks and output conventions shared by the k-anonymity algorithms (kACTUS, Mondrian).

Both algorithms take a table, a class column and the QID columns, and release the same shape:
every input column in its input order, QID cells as text (a suppressed cell holds the marker,
``?`` by default, which no input QID cell may hold), non-QID columns and the class unchanged,
rows shuffled so that their order reveals neither the input order nor the groups. Keeping these
rules in one place lets kACTUS, Mondrian and TDS releases be compared cell for cell. Before a
release leaves, the independent k-anonymity checker verifies it (:func:`checked_release`).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fedanon.arguments import column_list, optional_seed, require_frame
from fedanon.errors import FedanonError, MissingColumnError
from fedanon.models.k_anonymity import check_k_anonymity
from fedanon.release import Release

# Numbers written with more decimals than this are rounded to it when a group mean replaces them.
_MAX_DECIMALS = 6
_DECIMALS = re.compile(r"\.(\d+)$")


@dataclass
class QidColumn:
    """One QID column, encoded once: original cell text, numbers or category codes."""

    name: str
    numeric: bool
    text: np.ndarray  # object array: the original cell text ('' when missing)
    missing: np.ndarray  # bool: NA or empty (validate refuses the suppression marker)
    values: np.ndarray  # float64 (NaN when missing); numeric columns only, else empty
    codes: np.ndarray  # intp category codes (-1 when missing); categorical columns only
    categories: np.ndarray  # object array: category of each code (sorted); categorical only
    decimals: int  # digits after the decimal point that group means are rounded to

    def format_number(self, value: float) -> str:
        """A group mean at the column's precision: ages stay whole numbers."""
        return f"{round(value, self.decimals):.{self.decimals}f}"


def generator(seed: int | None) -> np.random.Generator:
    """The run's generator: the user's seed, or 128 secret bits from the OS."""
    seed = optional_seed(seed)
    return np.random.default_rng(secrets.randbits(128) if seed is None else seed)


def validate(
    df: pd.DataFrame, class_column: str, qids: Sequence[str] | None, k: int, marker: str
) -> list[str]:
    """The QID names after checking every precondition a user can get wrong (one-line errors)."""
    names = validate_columns(df, class_column, qids, marker)
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise FedanonError(f"k must be an integer, got {k!r}")
    if len(df) == 0:
        raise FedanonError("the table has no records")
    if k < 2 or k > len(df):
        raise FedanonError(f"k must be between 2 and the number of records ({len(df)}), got {k}")
    require_labels(df, class_column)
    if df[class_column].nunique() < 2:
        raise FedanonError(f"class column '{class_column}' holds a single value: nothing to learn")
    return names


def validate_columns(
    df: pd.DataFrame, class_column: str, qids: Sequence[str] | None, marker: str
) -> list[str]:
    """The checks one table passes on its own (a federated party's share needs no size or
    class variety): the columns and the marker; the QID names."""
    df, qids = require_frame(df), column_list(qids, "qids")
    if not isinstance(marker, str) or not marker:
        raise FedanonError("the suppression marker must be a non-empty string")
    if class_column not in df.columns:
        raise MissingColumnError(f"the table has no class column '{class_column}'")
    names = [c for c in df.columns if c != class_column] if not qids else list(qids)
    if len(set(names)) != len(names):
        raise FedanonError("a QID column is listed twice")
    for name in names:
        if name not in df.columns:
            raise FedanonError(f"the table has no QID column '{name}'")
        if name == class_column:
            raise FedanonError(f"the class column '{class_column}' cannot also be a QID")
    if not names:
        raise FedanonError("no QID columns (the table holds only the class)")
    for name in names:
        _require_no_marker(df[name], name, marker)
    return names


def require_labels(df: pd.DataFrame, class_column: str) -> None:
    """Every record has a class."""
    labels = df[class_column]
    if labels.isna().any():
        row = int(np.flatnonzero(labels.isna().to_numpy())[0])
        raise FedanonError(f"class column '{class_column}' has a missing value (row {row + 1})")


def _require_no_marker(column: pd.Series, name: str, marker: str) -> None:
    """Refuse input cells equal to the marker: a released marker must mean "suppressed" only,
    never the data's own missing value (UCI Adult writes ``?``), or a reader cannot tell them
    apart."""
    cells = column.astype(object).to_numpy()
    present = ~pd.isna(cells)
    hits = np.flatnonzero(present)[[str(v).strip() == marker for v in cells[present]]]
    if len(hits):
        raise FedanonError(
            f"QID column '{name}' already holds the suppression marker '{marker}' (row "
            f"{int(hits[0]) + 1}): choose another marker (marker= / --marker) so suppressed "
            "cells stay distinct from the data's own values"
        )


def encode_qid(column: pd.Series, name: str) -> QidColumn:
    """Encode one QID column; numeric when every present value parses as a number."""
    raw = column.astype(object).to_numpy()
    present = ~pd.isna(raw)
    text = np.full(len(raw), "", dtype=object)
    text[present] = [str(v).strip() for v in raw[present]]
    missing = text == ""
    if missing.all():
        raise FedanonError(f"QID column '{name}' holds only missing values")
    blanked = pd.Series(text).mask(missing)
    values = pd.to_numeric(blanked, errors="coerce").to_numpy(dtype=np.float64)
    numeric = not bool((np.isnan(values) & ~missing).any())
    if numeric:
        decimals = max(
            (len(m.group(1)) for t in set(text[~missing]) if (m := _DECIMALS.search(t))),
            default=0,
        )
        return QidColumn(
            name,
            True,
            text,
            missing,
            values,
            np.empty(0, np.intp),
            np.empty(0, object),
            min(decimals, _MAX_DECIMALS),
        )
    codes, categories = pd.factorize(blanked, sort=True)
    return QidColumn(
        name,
        False,
        text,
        missing,
        np.empty(0),
        codes.astype(np.intp),
        np.asarray(categories, dtype=object),
        0,
    )


def release_table(
    df: pd.DataFrame, qid_cells: dict[str, np.ndarray], rows: np.ndarray, rng: np.random.Generator
) -> pd.DataFrame:
    """The released rows (positions in `df`) with QID cells replaced, in shuffled order."""
    order = rng.permutation(rows)
    out = df.iloc[order].reset_index(drop=True)
    for name, cells in qid_cells.items():
        out[name] = pd.Series(cells[order], dtype=object)
    return out


def checked_release(table: pd.DataFrame, report: dict[str, Any]) -> Release:
    """The release with the independent checker's verdict as ``privacy_check``.

    The checker (`fedanon.models.k_anonymity`) shares no code with either algorithm, so a bug
    that released a group smaller than k stops here: such a release is never handed out.
    """
    parameters = report["parameters"]
    verdict = check_k_anonymity(table, parameters["qids"], parameters["k"])
    if not verdict.ok:
        raise FedanonError(f"the release fails {parameters['k']}-anonymity; nothing returned")
    return Release(table, {**report, "privacy_check": verdict.to_dict()})
