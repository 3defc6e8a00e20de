"""(alpha,k)-anonymity: the four release methods, the independent checker, the query workload.

`anonymize_alpha_k` returns a `Release` for every method. Global and local recoding release one
generalized table (``tables == {"table": table}``); lossy join and Anatomy release two tables,
``tables == {"nss": nss, "ss": ss}``, and `table` is then NSS, the one with the QIDs (each row of
each table is one original record; joining them does not give the data back, docs/alpha-k.md).
The report carries ``privacy_check``, the verdict of `fedanon.models.alpha_k` (which shares no
code with the algorithms) on the released cells; a release it refuses is never returned.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import pandas as pd

from fedanon.api import Release
from fedanon.errors import FedanonError
from fedanon.public.arguments import (
    column_list,
    optional_seed,
    require_frame,
    require_int,
    taxonomy_file,
)
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.tree import Taxonomy

#: A taxonomy file, its path, or the QIDs' trees by column.
TaxonomySpec = TaxonomyFile | str | os.PathLike[str] | Mapping[str, Taxonomy]


def anonymize_alpha_k(
    df: pd.DataFrame,
    *,
    qids: Sequence[str],
    sensitive: str,
    alpha: float | str | Fraction = "0.33",
    k: int = 2,
    method: str = "local",
    taxonomy: TaxonomySpec | None = None,
    seed: int | None = None,
) -> Release:
    """Release `df` so that every class has >= `k` records and no sensitive value > `alpha`.

    `method` is ``"global"`` or ``"local"`` recoding (one generalized table), ``"lossy-join"``
    or ``"anatomy"`` (an NSS/SS pair). Every method but Anatomy needs the QIDs' `taxonomy`.
    Without a seed one is drawn from `secrets` and reported, so the run can be repeated.
    """
    from fedanon.algorithms.alphak.api import anonymize_alpha_k as run
    from fedanon.algorithms.tds.verified import plain_text
    from fedanon.models.alpha_k import check_generalized, check_pair

    df = require_frame(df)
    names = column_list(qids, "qids") or []
    trees = _trees(taxonomy, df)
    release = run(
        df, names, sensitive, alpha, require_int(k, "k"), method, trees, optional_seed(seed)
    )
    if release.table is not None:
        table = plain_text(release.table)  # global recoding's engine hands out Categoricals
        tables = {"table": table}
        verdict = check_generalized(table, names, sensitive, alpha, k)
    else:
        table, ss = release.pair()
        tables = {"nss": table, "ss": ss}
        verdict = check_pair(table, ss, sensitive, alpha, k)
    if not verdict.ok:
        raise FedanonError(f"the release fails (alpha,k)-anonymity ({method}); nothing returned")
    return Release(table, {**release.report, "privacy_check": verdict.to_dict()}, tables)


def _trees(
    taxonomy: TaxonomySpec | None, df: pd.DataFrame
) -> TaxonomyFile | Mapping[str, Taxonomy] | None:
    """What the algorithm takes: a loaded file or trees by column (a path is loaded here)."""
    if taxonomy is None or isinstance(taxonomy, Mapping):
        return taxonomy
    return taxonomy_file(taxonomy, list(df.columns))


def check_alpha_k(
    df: pd.DataFrame | None = None,
    *,
    nss: pd.DataFrame | None = None,
    ss: pd.DataFrame | None = None,
    qids: Sequence[str] | None = None,
    sensitive: str,
    alpha: float | str | Fraction,
    k: int,
) -> dict[str, Any]:
    """Verify (alpha,k)-anonymity of a generalized table `df` (classes: equal released `qids`)
    or of an `nss` / `ss` pair (classes: ClassIDs; both tables must agree on every class size).

    Returns the JSON-ready verdict; the bound is compared exactly (alpha as a fraction).
    """
    from fedanon.models.alpha_k import check_generalized, check_pair

    if df is not None and (nss is not None or ss is not None):
        raise FedanonError("give either df or nss and ss, not both")
    if df is not None:
        names = column_list(qids, "qids")
        if not names:
            raise FedanonError("a generalized table needs qids (the columns that form classes)")
        return check_generalized(require_frame(df), names, sensitive, alpha, k).to_dict()
    if nss is None or ss is None:
        raise FedanonError("give df (a generalized table) or nss and ss (a pair)")
    pair = require_frame(nss, "nss"), require_frame(ss, "ss")
    return check_pair(*pair, sensitive, alpha, k).to_dict()


def evaluate_queries(
    raw: pd.DataFrame,
    *,
    releases: Mapping[str, Release | pd.DataFrame],
    qids: Sequence[str],
    sensitive: str,
    qd: int = 4,
    s: float = 0.05,
    queries: int = 1000,
    seed: int = 0,
    taxonomy: TaxonomySpec | None = None,
    qd_values: Sequence[int] = (),
    s_values: Sequence[float] = (),
) -> dict[str, Any]:
    """Average relative error of random COUNT queries on each named release (docs/alpha-k.md).

    A release is a `Release` (a pair is estimated through its ClassIDs) or a table, generalized
    (its labels named by `taxonomy`) or queried as it is. `qd` QIDs and the sensitive column per
    query, selectivity `s`; `qd_values` and `s_values` add the sweeps of the paper's figures.
    """
    from fedanon.utility.query_report import QueryRelease, evaluate_releases

    raw = require_frame(raw, "raw")
    named = []
    for name, release in releases.items():
        if isinstance(release, Release) and "nss" in release.tables:
            named.append(QueryRelease(name, nss=release.tables["nss"], ss=release.tables["ss"]))
        else:
            table = release.table if isinstance(release, Release) else release
            named.append(QueryRelease(name, table=require_frame(table, f"releases[{name!r}]")))
    trees = _trees(taxonomy, raw)
    return evaluate_releases(
        raw,
        named,
        column_list(qids, "qids") or [],
        sensitive,
        require_int(qd, "qd"),
        float(s),
        require_int(queries, "queries"),
        require_int(seed, "seed"),
        trees.taxonomies if isinstance(trees, TaxonomyFile) else trees,
        [require_int(q, "qd_values") for q in qd_values],
        [float(x) for x in s_values],
    )
