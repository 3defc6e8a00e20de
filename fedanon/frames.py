"""`fedanon.tidy`: any `evaluate_*` result as a tidy DataFrame, one row per measurement.

The evaluations return JSON-ready dicts (what ``--report`` writes), each nested its own way. A
notebook wants one shape for all of them, so one rule turns any of them into a long table:

- every number in the result is one row: ``measure`` names it by its path of keys
  (``"accuracy_mean"``, ``"count_queries.average_relative_error"``), ``value`` holds it;
- a list of numbers (one per fold, trial or projection) gives one row per number, numbered in
  the column ``trial`` from 1;
- the fields that identify a record (:data:`KEYS`: the method, k, inducer, number of clusters,
  dimensions kept, query dimension, selectivity) become columns of every row under it, and so do
  the entries of a dict keyed by attribute (``attribute``) or by release name (``release``);
- the job's description (:data:`SETTINGS`: QIDs, the workload, seeds) and text are not
  measurements and are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from fedanon.errors import FedanonError

#: Fields that identify the record they sit in: columns, not measurements.
KEYS = ("method", "inducer", "a", "b", "k", "K", "kept", "qd", "s")
#: Fields that describe the job rather than measure it.
SETTINGS = frozenset(
    {"workload", "qids", "attrs", "p", "seeded", "rescaled", "columns", "seed", "ks", "trials"}
)
#: Dicts whose keys are attribute names: their keys become the column ``attribute``.
BY_ATTRIBUTE = frozenset({"attributes"})


def tidy(evaluation: Mapping[str, Any]) -> pd.DataFrame:
    """The evaluation's measurements, one per row (module docstring); columns are the
    identifying fields present, then ``measure``, ``trial`` (where any) and ``value``."""
    if not isinstance(evaluation, Mapping):
        kind = type(evaluation).__name__
        raise FedanonError(f"tidy takes an evaluate_* result (a dict), got {kind}")
    releases = {str(r) for r in evaluation.get("releases", []) if isinstance(r, str)}
    rows: list[dict[str, Any]] = []
    _walk(evaluation, {}, [], releases, rows)
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise FedanonError("the evaluation holds no measurement")
    first = [c for c in ("release", "attribute", *KEYS) if c in frame.columns]
    last = ["measure", *(["trial"] if "trial" in frame.columns else []), "value"]
    frame = frame[[*first, *last]]
    # Identifying numbers stay integers where they are (k = 5, not 5.0), with <NA> where absent.
    return frame.convert_dtypes(convert_string=False, convert_floating=False)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _walk(
    obj: Any, context: dict[str, Any], path: list[str], releases: set[str], rows: list[dict]
) -> None:
    if isinstance(obj, Mapping):
        ids = {k: obj[k] for k in KEYS if k in obj and (_number(obj[k]) or isinstance(obj[k], str))}
        inner = {**context, **ids}
        for key, value in obj.items():
            if key in ids or key in SETTINGS or key == "releases":
                continue
            if path and path[-1] in BY_ATTRIBUTE:
                _walk(value, {**inner, "attribute": key}, path[:-1], releases, rows)
            elif key in releases:
                _walk(value, {**inner, "release": key}, path, releases, rows)
            else:
                _walk(value, inner, [*path, str(key)], releases, rows)
    elif isinstance(obj, list):
        if obj and all(_number(v) for v in obj):
            for trial, value in enumerate(obj, start=1):
                rows.append({**context, "measure": ".".join(path), "trial": trial, "value": value})
        else:
            for item in obj:
                _walk(item, context, path, releases, rows)
    elif _number(obj):
        rows.append({**context, "measure": ".".join(path), "value": obj})
