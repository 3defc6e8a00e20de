"""The paper's Adult experiment: Alpha(Lossy) against Anatomy and Alpha by count-query error.

Setting (docs/alpha-k.md, "Reproduction"): Adult without unknowns (45,222 rows), QID = age,
workclass, education, marital status, race, sex, native country, salary class (the first eight
attributes of the paper's Table 8), sensitive = occupation, k = 2, alpha = 0.33, 1000 queries
with qd = 4 and s = 0.05 by default; the taxonomies are the LKC authors' trees for Adult.
Alpha is the generalized table of top-down local recoding (the algorithm of the (alpha,k) paper
that Alpha(Lossy) splits into NSS/SS); global recoding is reported beside it for reference.
The paper varies d (QIDs used), qd, s and n; each point here uses one workload seed for all
releases so that they answer the same queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from fedanon.algorithms.alphak.api import anonymize_alpha_k
from fedanon.algorithms.alphak.query_report import QueryRelease, evaluate_queries
from fedanon.readers.datadir import data_dir
from fedanon.readers.table_io import read_table
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.loader import load_taxonomy

ADULT_QIDS = [
    "age",
    "workclass",
    "education",
    "martial-status",
    "race",
    "sex",
    "native-country",
    "class",
]
SENSITIVE = "occupation"
SERIES = {
    "Alpha(Lossy)": "lossy-join",
    "Anatomy": "anatomy",
    "Alpha": "local",
    "Alpha(global)": "global",
}


@dataclass
class AdultData:
    table: pd.DataFrame
    taxonomy: TaxonomyFile


def load_adult() -> AdultData:
    """The 45,222-row Adult table and the LKC authors' taxonomy from the data directory."""
    adult = data_dir() / "adult"
    return AdultData(
        read_table(adult / "adult_all.csv"), load_taxonomy(adult / "lkc_paper_taxonomy.hchy")
    )


def releases(
    data: AdultData,
    qids: Sequence[str],
    alpha: str,
    k: int,
    seed: int,
    series: Sequence[str] = tuple(SERIES),
    rows: int | None = None,
) -> tuple[pd.DataFrame, list[QueryRelease], dict[str, bool]]:
    """(raw table used, one release per series, independent-check verdict per series)."""
    table = data.table if rows is None else data.table.iloc[:rows].reset_index(drop=True)
    out: list[QueryRelease] = []
    verdicts: dict[str, bool] = {}
    for name in series:
        release = anonymize_alpha_k(
            table,
            qids=list(qids),
            sensitive_column=SENSITIVE,
            alpha=alpha,
            k=k,
            method=SERIES[name],
            taxonomy=data.taxonomy,
            seed=seed,
        )
        verdicts[name] = release.report["privacy_check"]["ok"]
        pieces = release.tables
        out.append(QueryRelease(name, pieces.get("table"), pieces.get("nss"), pieces.get("ss")))
    return table, out, verdicts


def errors_at(
    data: AdultData,
    *,
    qids: Sequence[str] = ADULT_QIDS,
    alpha: str = "0.33",
    k: int = 2,
    rows: int | None = None,
    qd: int = 4,
    s: float = 0.05,
    queries: int = 1000,
    seed: int = 1,
    qd_values: Sequence[int] = (),
    s_values: Sequence[float] = (),
    series: Sequence[str] = tuple(SERIES),
) -> dict[str, Any]:
    """The query-error report of every series at one setting (and its qd / s sweeps)."""
    table, made, verdicts = releases(data, qids, alpha, k, seed, series, rows)
    report = evaluate_queries(
        table,
        releases=made,
        qids=qids,
        sensitive_column=SENSITIVE,
        qd=qd,
        s=s,
        queries=queries,
        seed=seed,
        taxonomy=data.taxonomy,
        qd_values=qd_values,
        s_values=s_values,
    )
    report["checks"] = verdicts
    report["setting"] = {"d": len(qids), "alpha": alpha, "k": k, "n": len(table)}
    return report
