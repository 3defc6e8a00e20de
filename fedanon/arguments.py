"""Checks of the public API's arguments, so that a wrong type ends as one `FedanonError` line.

The algorithms check values (k in range, columns present); what only a notebook caller can get
wrong, a list instead of a DataFrame, one string where a list of columns belongs, a seed that
is not an integer, is checked here once for every family, before any work starts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError
from fedanon.taxonomy.files import TaxonomyFile


def require_frame(value: Any, name: str = "df") -> pd.DataFrame:
    """`value` itself when it is a DataFrame."""
    if not isinstance(value, pd.DataFrame):
        raise FedanonError(f"{name} must be a pandas DataFrame, got {type(value).__name__}")
    return value


def column_list(
    value: Sequence[str] | None, name: str, what: str = "column names"
) -> list[str] | None:
    """A list of names (None stays None); one bare string is refused, not split into letters."""
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise FedanonError(f"{name} must be a list of {what}, got {value!r}")
    return list(value)


def require_int(value: Any, name: str) -> int:
    """An integer (numpy integers too, booleans not)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise FedanonError(f"{name} must be an integer, got {value!r}")
    return int(value)


def taxonomy_file(
    taxonomy: TaxonomyFile | str | os.PathLike[str], columns: Sequence[str]
) -> TaxonomyFile:
    """A loaded taxonomy file as it is, or the file at a path (read against the table's columns)."""
    if isinstance(taxonomy, TaxonomyFile):
        return taxonomy
    if not isinstance(taxonomy, str | os.PathLike):
        raise FedanonError(f"taxonomy must be a taxonomy file or its path, got {taxonomy!r}")
    from fedanon.taxonomy.loader import load_taxonomy

    return load_taxonomy(taxonomy, data_columns=list(columns))


def optional_seed(value: Any) -> int | None:
    """None (secret random bits) or an integer seed."""
    return None if value is None else require_int(value, "seed")
