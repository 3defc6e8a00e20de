"""Centralized entry points: ``anonymize_randomize`` and ``evaluate_randomization``.

Centralized randomization is the federated protocol with one holder and no masking: the table's
own histograms make the plan (leader half), and the table is randomized by the party half. The
`Release` keeps every row, in the same order, and every column; redrawn QID columns are text.
Randomization has no k-style model checker: its privacy is Pa, which the report states.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedanon.algorithms.randomization.bias import (
    expected_support,
    frequent_combinations,
    lift_bias,
)
from fedanon.algorithms.randomization.coding import encode
from fedanon.algorithms.randomization.leader_half import Plan, make_plan
from fedanon.algorithms.randomization.party_half import LocalRecords
from fedanon.algorithms.randomization.rules import MIN_CONFIDENCE, MIN_SUPPORT, rule_recovery
from fedanon.algorithms.randomization.sampler import make_rng
from fedanon.arguments import column_list, optional_seed, require_frame, require_int
from fedanon.errors import FedanonError
from fedanon.keywords import renamed_keywords
from fedanon.release import Release


def anonymize_randomize(
    df: pd.DataFrame,
    *,
    qids: Sequence[str],
    method: str = "ra",
    attrs: int | None = None,
    p: str | Sequence[float] = "uniform",
    seed: int | None = None,
) -> Release:
    """RA (one attribute per record, chosen with probability p_i) or enhanced RA (`attrs` per
    record); `p` is ``"uniform"``, ``"optimal"`` (maximizes Pa) or one probability per QID.

    Each chosen QID cell is redrawn from that column's marginal; sensitive and non-QID columns
    are untouched. Without `seed` the draws come from a generator keyed by `secrets`.
    """
    began = time.perf_counter()
    local, plan = _planned(df, qids, method, attrs, p)
    table, changed = local.randomize(plan, make_rng(optional_seed(seed)))
    cells = len(df) * len(plan.qids)
    report = {
        **plan.summary(),
        "seeded": seed is not None,
        "changed_cells": changed,
        "changed_cell_fraction": round(changed / cells, 6),
        "seconds": round(time.perf_counter() - began, 4),
    }
    return Release(table, report, preserves_order=True)


def _planned(
    df: pd.DataFrame,
    qids: Sequence[str],
    method: str,
    attrs: int | None,
    p: str | Sequence[float],
) -> tuple[LocalRecords, Plan]:
    """The table's records and the plan its own histograms make (arguments checked)."""
    if len(require_frame(df)) == 0:
        raise FedanonError("the table has no rows")
    local = LocalRecords(df, column_list(qids, "qids") or [])
    attrs = None if attrs is None else require_int(attrs, "attrs")
    return local, make_plan(local.coded.qids, local.histograms(), method, attrs, _probabilities(p))


def _probabilities(p: str | Sequence[float]) -> str | tuple[float, ...]:
    if isinstance(p, str):
        return p
    try:
        return tuple(float(x) for x in p)
    except (TypeError, ValueError):
        raise FedanonError(f"p must be uniform, optimal or one number per QID, got {p!r}") from None


def bias_table(
    original: pd.DataFrame,
    released: pd.DataFrame,
    plan: Plan,
    lengths: Sequence[int] = (2, 3),
    top: int = 10,
) -> list[dict[str, Any]]:
    """Predicted vs measured relative bias of the `top` most frequent combinations per length.

    The prediction is exact given the original data (``expected_support``); its standard
    deviation says how far one release may stray. For RA the paper's lift form is reported too.
    """
    coded = encode(original, plan.qids)
    after = encode(released, plan.qids, coded.domains).codes
    n = len(original)
    frequencies = [c / c.sum() for c in plan.marginals]
    rows = []
    for length in lengths:
        if length > len(plan.qids):
            continue
        for combo, support in frequent_combinations(coded.codes, coded.sizes, length, top):
            mean, variance = expected_support(
                combo, coded.codes, frequencies, plan.method, plan.p, plan.k
            )
            measured = combo.support(after)
            row = {
                "combination": combo.label(plan.qids, coded.domains),
                "support": round(support / n, 6),
                "predicted_bias": round((mean - support) / support, 6),
                "predicted_sd": round(float(np.sqrt(variance)) / support, 6),
                "measured_bias": round((measured - support) / support, 6),
            }
            if plan.p is not None:  # RA; enhanced RA draws no attribute probabilities
                row["lift_bias"] = round(lift_bias(combo, coded.codes, frequencies, plan.p), 6)
            rows.append(row)
    return rows


@renamed_keywords(sensitive="sensitive_column")
def evaluate_randomization(
    df: pd.DataFrame,
    *,
    qids: Sequence[str],
    release: Release | pd.DataFrame | None = None,
    method: str = "ra",
    attrs: int | None = None,
    p: str | Sequence[float] = "uniform",
    seed: int | None = None,
    top: int = 10,
    sensitive_column: str | None = None,
    queries: int = 1000,
    qd: int = 4,
    s: float = 0.05,
    rules: bool = True,
    rule_support: float = MIN_SUPPORT,
    rule_confidence: float = MIN_CONFIDENCE,
) -> dict[str, Any]:
    """Pa, changed cells, predicted vs measured bias of frequent combinations and, with a
    `sensitive_column`, the count-query error of the shared workload (the release is queried
    directly, as the paper does) and association-rule recovery over the QIDs (and the
    sensitive column) at `rule_support` / `rule_confidence`.

    `release` is a randomized table of `df` made with the same method and parameters (rows in
    the same order); without it one is made here (with `seed`, which also draws the query
    workload).
    """
    local, plan = _planned(df, qids, method, attrs, p)
    if release is None:
        release = local.randomize(plan, make_rng(optional_seed(seed)))[0]
    elif isinstance(release, Release):
        release = release.table
    if len(require_frame(release, "release")) != len(df):
        raise FedanonError(f"the release has {len(release)} rows, the data {len(df)}")
    coded = encode(df, plan.qids)
    after = encode(release, plan.qids, coded.domains)
    changed = int(np.count_nonzero(after.codes != coded.codes))
    marginal_gap = max(
        int(np.abs(a - b).max())
        for a, b in zip(after.histograms(), coded.histograms(), strict=True)
    )
    report: dict[str, Any] = {
        **plan.summary(),
        "changed_cell_fraction": round(changed / coded.codes.size, 6),
        "largest_marginal_count_change": marginal_gap,
        "bias": bias_table(df, release, plan, top=require_int(top, "top")),
    }
    if sensitive_column is not None:
        report["count_queries"] = query_error(
            df, release, plan.qids, sensitive_column, queries, qd, s, optional_seed(seed)
        )
    if rules:
        columns = [*plan.qids, *([sensitive_column] if sensitive_column else [])]
        report["rules"] = rule_recovery(df, release, columns, rule_support, rule_confidence)
    return report


def query_error(
    df: pd.DataFrame,
    release: pd.DataFrame,
    qids: Sequence[str],
    sensitive: str,
    queries: int,
    qd: int,
    s: float,
    seed: int | None,
) -> dict[str, Any]:
    """Average relative error of the shared COUNT workload on the release, queried directly."""
    from fedanon.utility.queries import QueryWorkload, average_relative_error

    if sensitive in qids:
        raise FedanonError(f"the sensitive column '{sensitive}' is also a QID")
    workload = QueryWorkload.generate(df, qids, sensitive, min(qd, len(qids)), s, queries, seed)
    error = average_relative_error(workload.actual, workload.estimate_direct(release))
    return {**workload.to_dict(), "average_relative_error": round(error, 6)}
