"""The public Python API of LKC anonymization, for notebooks: keyword arguments, DataFrames in,
a `Release` (table + report) out. ``import fedanon`` exposes these names lazily (docs/api.md);
every other method family's entry point returns the same `Release` (fedanon/release.py).

`anonymize_lkc` runs the same pipeline as ``fedanon anonymize lkc``: schema from the taxonomy
and the options, top-down specialization, plain-text columns, the independent privacy check.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from fedanon.arguments import require_frame, taxonomy_file
from fedanon.errors import FedanonError
from fedanon.keywords import renamed_keywords
from fedanon.release import Release
from fedanon.schema import LKCParams, Schema
from fedanon.taxonomy.files import SensitiveValue, TaxonomyFile

#: Sensitive values as ``{"column": ["value", ...]}`` or ``["column=value,value", ...]``.
SensitiveSpec = Mapping[str, Sequence[str]] | Sequence[str]


def _sensitive(sensitive: SensitiveSpec | None) -> list[SensitiveValue] | None:
    if sensitive is None:
        return None
    if isinstance(sensitive, Mapping):
        return [SensitiveValue(str(c), str(v)) for c, values in sensitive.items() for v in values]
    if isinstance(sensitive, str):
        raise FedanonError(
            "sensitive_values: give a mapping {column: [values]} or a list of 'COL=v,w'"
        )
    from fedanon.algorithms.tds.api import parse_sensitive

    return parse_sensitive(list(sensitive))


@renamed_keywords(K="k", sensitive="sensitive_values")
def anonymize_lkc(
    df: pd.DataFrame,
    *,
    taxonomy: TaxonomyFile | str | os.PathLike[str],
    L: int = 4,
    k: int = 20,
    C: float | str | Fraction = 0.2,
    qids: Sequence[str] | None = None,
    sensitive_values: SensitiveSpec | None = None,
    class_column: str | None = None,
    score: str | None = None,
    drop: Sequence[str] = (),
) -> Release:
    """Anonymize `df` to LKC-privacy by top-down specialization.

    `qids`, `sensitive_values` and `class_column` default to the taxonomy file's own sections.
    `score` defaults to information gain with a class column and discernibility without one. The
    release is verified by the independent checker before it is returned; its verdict is
    ``report["privacy_check"]``.
    """
    from fedanon.algorithms.tds.api import anonymize_lkc as run
    from fedanon.algorithms.tds.api import build_schema
    from fedanon.algorithms.tds.verified import verified_release
    from fedanon.schema import parse_confidence_bound

    df = require_frame(df)
    tax = taxonomy_file(taxonomy, list(df.columns))
    schema = build_schema(tax, df, qids, _sensitive(sensitive_values), class_column)
    params = LKCParams.of(L, k, parse_confidence_bound(C))
    chosen = score or ("infogain" if schema.class_column else "discernibility")
    release = verified_release(run(df, schema, params, chosen, drop), schema, params)
    inputs = [taxonomy] if isinstance(taxonomy, str | os.PathLike) else []
    report = {
        **release.report,
        "release_report": steward_report(
            release.table,
            release.report,
            schema,
            params,
            chosen,
            "fedanon.anonymize_lkc",
            inputs,
            original=df,
        ),
    }
    return Release(release.table, report, preserves_order=True)


def steward_report(
    table: pd.DataFrame,
    report: dict[str, Any],
    schema: Schema,
    params: LKCParams,
    score: str,
    command: str,
    inputs: Sequence[str | os.PathLike[str]],
    parties: list[dict[str, Any]] | None = None,
    original: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """The steward's release report (docs/steward-guide.md) of a checked LKC release, for
    `Release.to_html`; the command line builds the same object for ``--html``."""
    from fedanon.report.build import JobDescription, build_release_report

    return build_release_report(
        table,
        JobDescription(
            command,
            "LKC-privacy (top-down specialization)",
            {"L": params.L, "K": params.K, "C": str(params.C), "score": score},
            inputs,
            parties or [],
        ),
        schema.qids,
        [(s.column, s.value) for s in schema.sensitive],
        schema.taxonomies,
        schema.class_column,
        report["privacy_check"],
        original=original,
    )


@renamed_keywords(K="k", sensitive="sensitive_values")
def check_lkc(
    df: pd.DataFrame,
    *,
    qids: Sequence[str],
    sensitive_values: SensitiveSpec | None = None,
    L: int = 4,
    k: int = 20,
    C: float | str | Fraction = 0.2,
) -> dict[str, Any]:
    """Verify LKC-privacy of a released table by brute force (the independent checker).

    Cells are compared as text. Returns the JSON-ready verdict: ``ok`` and, when it fails, the
    worst violating group.
    """
    from fedanon.models.lkc import check_lkc as check
    from fedanon.schema import parse_confidence_bound

    values: dict[str, list[str]] = {}
    for s in _sensitive(sensitive_values) or []:
        values.setdefault(s.column, []).append(s.value)
    return check(
        require_frame(df).astype(str), qids, values, L, k, parse_confidence_bound(C)
    ).to_dict()


def evaluate_lkc(
    raw: pd.DataFrame,
    released: pd.DataFrame,
    *,
    test: Sequence[bool] | np.ndarray | pd.Series,
    class_column: str,
    qids: Sequence[str],
    numeric_qids: Sequence[str] = (),
) -> dict[str, float | int]:
    """The LKC paper's utility figures of a release (docs/evaluation.md).

    `raw` and `released` hold the same rows in the same order; `test` marks the rows held out
    for measuring the classifiers. Returns CE, BE, UE (percent), DR and the row counts.
    """
    from fedanon.utility.evaluation import evaluate_release

    raw, released = require_frame(raw, "raw"), require_frame(released, "released")
    mask = np.asarray(test, dtype=bool)
    if len(mask) != len(raw) or len(raw) != len(released):
        raise FedanonError("raw, released and test must have the same number of rows")
    raw = raw.reset_index(drop=True)
    released = released.reset_index(drop=True)
    return evaluate_release(
        raw[~mask], raw[mask], released[~mask], released[mask], class_column, qids, numeric_qids
    )
