"""k-anonymity by suppression: kACTUS, its Mondrian baseline, the checker and the evaluation.

Both anonymizers return a `Release` whose report carries ``privacy_check``: the verdict of the
independent k-anonymity checker (`fedanon.models.k_anonymity`, which shares no code with either
algorithm) on the released cells, as LKC's report does. A release the checker refuses is never
returned. `evaluate_classification` is the kACTUS paper's 5x2 cross-validation protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fedanon.api import Release
from fedanon.errors import FedanonError
from fedanon.public.arguments import column_list, optional_seed, require_frame, require_int


def anonymize_kactus(
    df: pd.DataFrame,
    *,
    class_column: str,
    qids: Sequence[str] | None = None,
    k: int = 50,
    seed: int | None = None,
    marker: str = "?",
    prune: bool = True,
) -> Release:
    """k-anonymize `df` by kACTUS (docs/kactus.md); `qids` defaults to every column but the class.

    QIDs a leaf tests by equality keep their value, numeric ones tested only by inequalities get
    the group mean, every other QID cell becomes `marker`. The same `seed` gives the same
    release; without one the run draws 128 secret bits.
    """
    from fedanon.algorithms.kactus.api import anonymize_kactus as run

    release = run(
        require_frame(df),
        class_column,
        qids=column_list(qids, "qids"),
        k=require_int(k, "k"),
        seed=optional_seed(seed),
        marker=marker,
        prune=bool(prune),
    )
    return _checked(release.table, release.report)


def anonymize_mondrian(
    df: pd.DataFrame,
    *,
    class_column: str,
    qids: Sequence[str] | None = None,
    k: int = 50,
    seed: int | None = None,
    marker: str = "?",
    orders: Mapping[str, Sequence[str]] | None = None,
) -> Release:
    """k-anonymize `df` by strict Mondrian, the baseline kACTUS is compared with (docs/kactus.md).

    Numbers become ``[lo, hi]``, ordered categories (`orders`: column -> values in order)
    ``[first, last]``, other categories their single value or `marker`. `seed` only shuffles
    the released rows.
    """
    from fedanon.algorithms.mondrian.api import anonymize_mondrian as run

    if orders is not None and not isinstance(orders, Mapping):
        raise FedanonError(f"orders must be a mapping column -> values, got {orders!r}")
    release = run(
        require_frame(df),
        class_column,
        qids=column_list(qids, "qids"),
        k=require_int(k, "k"),
        seed=optional_seed(seed),
        marker=marker,
        orders={c: column_list(v, f"orders[{c!r}]") or [] for c, v in (orders or {}).items()},
    )
    return _checked(release.table, release.report)


def _checked(table: pd.DataFrame, report: dict[str, Any]) -> Release:
    """The release with the independent checker's verdict; refused when the verdict fails."""
    from fedanon.models.k_anonymity import check_k_anonymity as check

    parameters = report["parameters"]
    verdict = check(table, parameters["qids"], parameters["k"])
    if not verdict.ok:
        raise FedanonError(f"the release fails {parameters['k']}-anonymity; nothing returned")
    return Release(table, {**report, "privacy_check": verdict.to_dict()})


def check_k_anonymity(df: pd.DataFrame, *, qids: Sequence[str], k: int) -> dict[str, Any]:
    """Verify that every combination of QID cells occurs at least `k` times (docs/kactus.md).

    Cells are compared as text, so a suppressed value is a value like any other. Returns the
    JSON-ready verdict: ``ok``, the group counts and the values of the smallest group.
    """
    from fedanon.models.k_anonymity import check_k_anonymity as check

    names = column_list(qids, "qids") or []
    return check(require_frame(df), names, require_int(k, "k")).to_dict()


def evaluate_classification(
    df: pd.DataFrame,
    *,
    class_column: str,
    methods: Sequence[str] = ("kactus", "mondrian"),
    k_values: Sequence[int] = (5, 10, 20, 30),
    inducers: Sequence[str] = ("c45",),
    qids: Sequence[str] | None = None,
    taxonomy: str | Path | None = None,
    seed: int = 1,
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Accuracy of classifiers trained on k-anonymous releases, the kACTUS paper's protocol.

    5x2 cross-validation: only the training half is anonymized (by each of `methods`: kactus,
    mondrian, tds; tds needs a `taxonomy` file), classifiers are tested on the other half.
    Returns mean accuracy, its spread and the 5x2 cv F test per method, k and inducer.
    `on_step` receives a progress line per fold and method.
    """
    from fedanon.utility.classification import evaluate_classification as run
    from fedanon.utility.k_anonymizers import anonymizers

    chosen = column_list(methods, "methods", "method names") or []
    anonymize = anonymizers(chosen, class_column, column_list(qids, "qids"), taxonomy)
    ks = [require_int(k, "k_values") for k in k_values]
    return run(
        require_frame(df),
        class_column,
        anonymize,
        ks,
        column_list(inducers, "inducers", "inducer names") or [],
        require_int(seed, "seed"),
        on_step,
    )
