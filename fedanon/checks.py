"""The public checkers of released tables: keyword arguments in, JSON-ready verdicts out.

Each wraps an independent checker of `fedanon.models` (which shares no code with any
algorithm) so that a notebook gets the same verdict the command line's ``check`` prints and an
anonymizer's report carries as ``privacy_check``. LKC's checker is
`fedanon.algorithms.tds.public.check_lkc`.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pandas as pd

from fedanon.arguments import column_list, require_frame, require_int
from fedanon.errors import FedanonError
from fedanon.keywords import renamed_keywords
from fedanon.models.alpha_k import check_generalized, check_pair
from fedanon.models.k_anonymity import check_k_anonymity as k_anonymity_of
from fedanon.models.l_diversity import check_l_diversity as l_diversity_of
from fedanon.models.t_closeness import check_t_closeness as t_closeness_of


def check_k_anonymity(df: pd.DataFrame, *, qids: Sequence[str], k: int) -> dict[str, Any]:
    """Verify that every combination of QID cells occurs at least `k` times (docs/kactus.md).

    Cells are compared as text, so a suppressed value is a value like any other. Returns
    ``ok``, the group counts and the values of the smallest group.
    """
    names = column_list(qids, "qids") or []
    return k_anonymity_of(require_frame(df), names, require_int(k, "k")).to_dict()


@renamed_keywords(sensitive="sensitive_column")
def check_alpha_k(
    df: pd.DataFrame | None = None,
    *,
    nss: pd.DataFrame | None = None,
    ss: pd.DataFrame | None = None,
    qids: Sequence[str] | None = None,
    sensitive_column: str,
    alpha: float | str | Fraction,
    k: int,
) -> dict[str, Any]:
    """Verify (alpha,k)-anonymity of a generalized table `df` (classes: equal released `qids`)
    or of an `nss` / `ss` pair (classes: ClassIDs; both tables must agree on every class size).

    The bound is compared exactly, alpha as a fraction (docs/alpha-k.md).
    """
    if df is not None and (nss is not None or ss is not None):
        raise FedanonError("give either df or nss and ss, not both")
    if df is not None:
        names = column_list(qids, "qids")
        if not names:
            raise FedanonError("a generalized table needs qids (the columns that form classes)")
        return check_generalized(require_frame(df), names, sensitive_column, alpha, k).to_dict()
    if nss is None or ss is None:
        raise FedanonError("give df (a generalized table) or nss and ss (a pair)")
    pair = require_frame(nss, "nss"), require_frame(ss, "ss")
    return check_pair(*pair, sensitive_column, alpha, k).to_dict()


@renamed_keywords(sensitive="sensitive_column")
def check_l_diversity(
    df: pd.DataFrame,
    *,
    qids: Sequence[str],
    sensitive_column: str,
    l: float,  # noqa: E741 (the model is named by its letter, as in ARX and pycanon)
    measure: str = "distinct",
) -> dict[str, Any]:
    """Verify l-diversity of column `sensitive_column` in every class of equal `qids` cells.

    `measure` is ``"distinct"`` (at least l distinct values per class) or ``"entropy"``
    (``exp(entropy) >= l`` per class); ``achieved_l`` is the smallest over the classes
    (docs/checker.md).
    """
    names = column_list(qids, "qids") or []
    return l_diversity_of(require_frame(df), names, sensitive_column, l, measure).to_dict()


@renamed_keywords(sensitive="sensitive_column")
def check_t_closeness(
    df: pd.DataFrame,
    *,
    qids: Sequence[str],
    sensitive_column: str,
    t: float,
    distance: str | None = None,
) -> dict[str, Any]:
    """Verify t-closeness: the `sensitive_column` distribution of every class within EMD `t`
    of the whole table's.

    `distance` is ``"equal"`` (categories) or ``"ordered"`` (numbers); by default ordered when
    every cell is a number (docs/checker.md). ``achieved_t`` is the largest EMD of any class.
    """
    names = column_list(qids, "qids") or []
    return t_closeness_of(require_frame(df), names, sensitive_column, t, distance).to_dict()
