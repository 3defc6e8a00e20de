"""`Release`: what every anonymization entry point returns, whatever its method family."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from fedanon.errors import FedanonError


@dataclass(frozen=True)
class Release:
    """An anonymized table (plain strings in generalized columns) and its JSON-ready report.

    Every method family returns this one shape, so a notebook handles all of them alike.
    `tables` names every table the release consists of; a one-table release holds just
    ``{"table": table}``, a release of several (an (alpha,k) NSS/SS pair, DRBT's table with its
    private id map) names each one, and `table` is then the main one (docs/api.md).

    Rows and index, one rule for every family (`preserves_order`, which each entry point must
    state):

    - ``True``: row i of the release is row i of the input, under the input's index (a
      RangeIndex when the input has none), so ``df.join(release.table, rsuffix="_released")``
      lines them up. LKC, (alpha,k) global and local recoding, randomization, and the
      sanitization of a log (iga, rra, ra, swa).
    - ``False``: the rows are shuffled (kACTUS, Mondrian, DRBT, the lossy-join and Anatomy
      NSS/SS pair) or are not input rows (DSA's itemsets), and every table has a fresh
      RangeIndex 0..n-1. No map from released to input rows is returned: the shuffle *is* the
      protection (row order would reveal the groups, link NSS to SS, or a projected object to its
      record), and a map kept beside the release undoes it. DRBT's ``id_map`` (only with an id
      column) maps the owner's ids to released tokens and is the owner's secret, never released.
    """

    table: pd.DataFrame
    report: dict[str, Any]
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    preserves_order: bool = field(default=False, kw_only=True)

    def __post_init__(self) -> None:
        if not self.tables:  # frozen: set the default view once, here
            object.__setattr__(self, "tables", {"table": self.table})
        if not self.preserves_order:
            for name, table in self.tables.items():
                if not table.index.equals(pd.RangeIndex(len(table))):
                    raise ValueError(  # a bug in an entry point, not a user error
                        f"release table '{name}' is reordered but keeps an input index"
                    )

    def _repr_html_(self) -> str:
        """The steward's release report (the page ``--html`` writes), shown by Jupyter."""
        from fedanon.report.html import render_html

        return render_html(self._release_report())

    def to_html(self, path: str | os.PathLike[str]) -> Path:
        """Write the steward's release report to `path` (all or nothing); return the path."""
        from fedanon.atomic import write_text_atomic
        from fedanon.report.html import render_html

        page = render_html(self._release_report())
        try:
            write_text_atomic(path, page)
        except OSError as exc:
            raise FedanonError(f"{path}: cannot write the report ({exc.strerror})") from None
        return Path(path)

    def _release_report(self) -> dict[str, Any]:
        report = self.report.get("release_report")
        if report is None:  # the steward report needs QIDs and taxonomies: LKC releases
            method = self.report.get("method") or self.report.get("algorithm") or "this method"
            raise FedanonError(
                f"no steward report for a {method} release (anonymize_lkc releases carry one)"
            )
        return dict(report)
