"""Query-error report for several releases of one raw table, and its chart.

Every release is measured on the same workloads (same seed), so the differences between them are
the releases' and not the queries'. Besides the default (qd, s), the report sweeps qd at the
default s and s at the default qd, the two axes along which the paper plots error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fedanon.arguments import column_list, require_frame, require_int, taxonomy_file
from fedanon.atomic import atomic_path
from fedanon.errors import FedanonError
from fedanon.keywords import renamed_keywords
from fedanon.release import Release
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.tree import Taxonomy
from fedanon.utility.queries import QueryWorkload, relative_error


@dataclass
class QueryRelease:
    """A named release: a table (generalized or queried as it is) or an NSS/SS pair."""

    name: str
    table: pd.DataFrame | None = None
    nss: pd.DataFrame | None = None
    ss: pd.DataFrame | None = None

    def estimate(
        self, workload: QueryWorkload, taxonomies: Mapping[str, Taxonomy] | None
    ) -> np.ndarray:
        """The workload's estimates on this release (raw values in a table count exactly)."""
        if self.table is not None:
            return workload.estimate_generalized(self.table, taxonomies)
        if self.nss is None or self.ss is None:
            raise FedanonError(f"release '{self.name}' has neither a table nor an NSS/SS pair")
        return workload.estimate_lossy_join(self.nss, self.ss)


def _errors(
    raw: pd.DataFrame,
    releases: Sequence[QueryRelease],
    qids: Sequence[str],
    sensitive: str,
    qd: int,
    s: float,
    n_queries: int,
    seed: int,
    taxonomies: Mapping[str, Taxonomy] | None,
) -> dict[str, Any]:
    workload = QueryWorkload.generate(raw, qids, sensitive, qd, s, n_queries, seed)
    out: dict[str, Any] = {"qd": qd, "s": s, "mean_actual": float(workload.actual.mean())}
    for release in releases:
        err = relative_error(workload.actual, release.estimate(workload, taxonomies))
        out[release.name] = {
            "average_relative_error": float(err.mean()),
            "median_relative_error": float(np.median(err)),
        }
    return out


@renamed_keywords(sensitive="sensitive_column")
def evaluate_queries(
    raw: pd.DataFrame,
    *,
    releases: Mapping[str, Release | pd.DataFrame] | Sequence[QueryRelease],
    qids: Sequence[str],
    sensitive_column: str,
    qd: int = 4,
    s: float = 0.05,
    queries: int = 1000,
    seed: int = 0,
    taxonomy: TaxonomyFile | str | os.PathLike[str] | Mapping[str, Taxonomy] | None = None,
    qd_values: Sequence[int] = (),
    s_values: Sequence[float] = (),
) -> dict[str, Any]:
    """Average relative error of every release at (qd, s) and along the qd and s sweeps.

    A release is a `Release` (an NSS/SS pair is estimated through its ClassIDs) or a table,
    generalized (its labels named by `taxonomy`) or queried as it is, by name. Each COUNT query
    takes `qd` random QIDs and the sensitive column, selectivity `s`.
    """
    raw = require_frame(raw, "raw")
    if isinstance(releases, Mapping):
        measured = [_named(name, release) for name, release in releases.items()]
    else:
        measured = list(releases)
    qids = column_list(qids, "qids") or []
    qd, n_queries, seed = (
        require_int(qd, "qd"),
        require_int(queries, "queries"),
        require_int(seed, "seed"),
    )
    taxonomies = _trees(taxonomy, raw)
    names = [r.name for r in measured]
    if not measured:
        raise FedanonError("no release to evaluate (give --release or --nss/--ss)")
    if len(set(names)) != len(names):
        raise FedanonError(f"two releases share a name: {names} (name them NAME=PATH)")
    args = (raw, measured, qids, sensitive_column)
    default = _errors(*args, qd, s, n_queries, seed, taxonomies)
    return {
        "workload": {
            "qids": list(qids),
            "sensitive": sensitive_column,
            "qd": qd,
            "s": s,
            "queries": n_queries,
            "seed": seed,
        },
        "releases": names,
        "default": default,
        "by_qd": [_errors(*args, q, s, n_queries, seed, taxonomies) for q in qd_values],
        "by_s": [_errors(*args, qd, x, n_queries, seed, taxonomies) for x in s_values],
    }


def _named(name: str, release: Release | pd.DataFrame) -> QueryRelease:
    if isinstance(release, Release) and "nss" in release.tables:
        return QueryRelease(name, nss=release.tables["nss"], ss=release.tables["ss"])
    table = release.table if isinstance(release, Release) else release
    return QueryRelease(name, table=require_frame(table, f"releases[{name!r}]"))


def _trees(
    taxonomy: TaxonomyFile | str | os.PathLike[str] | Mapping[str, Taxonomy] | None,
    raw: pd.DataFrame,
) -> Mapping[str, Taxonomy] | None:
    if taxonomy is None or isinstance(taxonomy, Mapping):
        return taxonomy
    return taxonomy_file(taxonomy, list(raw.columns)).taxonomies


def plot_query_errors(report: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Two panels, error against qd and against s, one line per release (PNG, atomic)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    names = list(report["releases"])
    fig = Figure(figsize=(11, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    panels = fig.subplots(1, 2)
    default = report["default"]
    for axes, key, axis, fixed in (
        (panels[0], "by_qd", "qd", f"s = {default['s']}"),
        (panels[1], "by_s", "s", f"qd = {default['qd']}"),
    ):
        points = sorted(report[key] or [default], key=lambda p: p[axis])
        xs = [p[axis] for p in points]
        for name in names:
            axes.plot(
                xs, [p[name]["average_relative_error"] for p in points], marker="o", label=name
            )
        axes.set(
            xlabel=axis, ylabel="average relative error", title=f"error against {axis} ({fixed})"
        )
        # Errors of different methods span decades; a log axis cannot show a zero (raw table).
        if all(p[name]["average_relative_error"] > 0 for p in points for name in names):
            axes.set_yscale("log")
        if axis == "qd":
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="small")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
