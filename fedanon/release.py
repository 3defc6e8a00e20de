"""`Release`: what every anonymization entry point returns, whatever its method family."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Release:
    """An anonymized table (plain strings in generalized columns) and its JSON-ready report.

    Every method family returns this one shape, so a notebook handles all of them alike.
    `tables` names every table the release consists of; a one-table release holds just
    ``{"table": table}``, a release of several (an (alpha,k) NSS/SS pair, DRBT's table with its
    private id map) names each one, and `table` is then the main one (docs/api.md).
    """

    table: pd.DataFrame
    report: dict[str, Any]
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.tables:  # frozen: set the default view once, here
            object.__setattr__(self, "tables", {"table": self.table})
