"""The LKC paper's utility protocol (BE, CE, UE, DR) over parties, without pooling raw records.

`fedanon.utility.evaluation` computes the four figures on pooled tables. Here each party keeps
its raw training and test rows and its rows of the release, and the figures come out equal:

- CE: the tree is trained on the integrated release's training rows (the release is the
  federation's public output), each party counts its errors on its own released test rows, and
  the (errors, rows) pairs are added by `add` (a secure sum in the federation).
- BE and UE need a tree trained on raw records: it is grown from secure sums of counts
  (`fedanon.utility.c45_counts`, the pooled tree node for node), then tested the same way.
- DR is a function of the integrated release alone.

`union` and `add` are the secure set union and secure sum in the federation (plain here by
default; the core imports no crypto).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError
from fedanon.utility.c45 import C45
from fedanon.utility.c45_counts import (
    Adder,
    FeatureKinds,
    FederatedOracle,
    LocalOracle,
    Union,
    agree_schema,
    fit_from_counts,
    local_domains,
    plain_sum,
    plain_union,
)
from fedanon.utility.evaluation import (
    _features,
    _numeric_others,
    _require_columns,
    utility_figures,
)


@dataclass
class PartyTables:
    """One party's share: its raw training and test rows and the same rows as released."""

    raw_train: pd.DataFrame
    raw_test: pd.DataFrame
    released_train: pd.DataFrame
    released_test: pd.DataFrame


def evaluate_release_federated(
    parties: Sequence[PartyTables],
    class_col: str,
    qids: Sequence[str],
    numeric_qids: Iterable[str],
    numeric_other: Iterable[str] | None = None,
    union: Union = plain_union,
    add: Adder = plain_sum,
) -> dict[str, float | int]:
    """CE, BE, UE (percent), DR and the derived figures, as
    :func:`fedanon.utility.evaluation.evaluate_release` gives them on the pooled tables."""
    if not parties:
        raise FedanonError("the federated utility protocol needs at least one party")
    numeric_qids = set(numeric_qids)
    # Column kinds from the tables' dtypes alone (no rows), combined as pooling combines them.
    shape = pd.concat([p.raw_train.iloc[:0] for p in parties], ignore_index=True)
    features = _features(shape, class_col, qids, numeric_qids)
    others = _numeric_others(shape, features, qids, numeric_other)
    for i, p in enumerate(parties):
        _require_columns(p.raw_test, [*features, class_col], f"party {i}: raw test table")
        for name, table, raw in (
            ("released training table", p.released_train, p.raw_train),
            ("released test table", p.released_test, p.raw_test),
        ):
            _require_columns(table, [*features, class_col], f"party {i}: {name}")
            if len(table) != len(raw):
                raise FedanonError(
                    f"party {i}: {name} has {len(table)} rows, the raw one {len(raw)}"
                )
    released_train = pd.concat([p.released_train for p in parties], ignore_index=True)
    release_model = C45().fit(released_train[features], released_train[class_col], others)
    ce = _error(release_model, [(p.released_test, features) for p in parties], class_col, add)
    remaining = [f for f in features if f not in set(qids)]
    baseline = {}
    for figure, used, numeric in (
        ("BE", features, numeric_qids | others),
        ("UE", remaining, others),
    ):
        model = _federated_fit(parties, used, numeric, class_col, union, add)
        baseline[figure] = _error(model, [(p.raw_test, used) for p in parties], class_col, add)
    release = pd.concat(
        [p.released_train[list(qids)] for p in parties]
        + [p.released_test[list(qids)] for p in parties],
        ignore_index=True,
    )
    n_test = sum(len(p.released_test) for p in parties)
    return utility_figures(
        ce, baseline["BE"], baseline["UE"], release, qids, len(released_train), n_test
    )


def _federated_fit(
    parties: Sequence[PartyTables],
    features: list[str],
    numeric: set[str],
    class_col: str,
    union: Union,
    add: Adder,
) -> C45:
    """The C4.5 tree of the pooled raw training rows, grown from the parties' summed counts."""
    kinds = FeatureKinds(features, frozenset(numeric & set(features)))
    tables = [(p.raw_train[features], p.raw_train[class_col]) for p in parties]
    schema = agree_schema(kinds, [local_domains(x, y, kinds) for x, y in tables], union)
    oracle = FederatedOracle([LocalOracle(x, y, schema) for x, y in tables], add)
    return fit_from_counts(oracle, schema)


def _error(
    model: C45, tests: Sequence[tuple[pd.DataFrame, list[str]]], class_col: str, add: Adder
) -> float:
    """Percent of all parties' test rows `model` misclassifies: each party counts its errors
    and rows; only the sums leave."""
    vectors = [
        np.array([int((model.predict(t[f]) != t[class_col].to_numpy()).sum()), len(t)], np.int64)
        for t, f in tests
    ]
    errors, rows = (int(v) for v in add(vectors))
    if rows == 0:
        raise ValueError("classification error on an empty test table is undefined")
    return 100.0 * (errors / rows)  # the pooled np.mean of 0/1 errors, exactly
