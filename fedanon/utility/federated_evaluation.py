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
default; the core imports no crypto). Through the daemons (the ``evaluate`` job kind) each party
splits its own table with :func:`held_out_mask` and generalizes it by the release's cut with
:func:`party_tables`, so no party needs a second file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError
from fedanon.taxonomy.tree import Taxonomy
from fedanon.text import as_text
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
    evaluate_release,
    utility_figures,
)
from fedanon.utility.pairing import generalized_rows


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
    return percent(add([error_counts(model, t, f, class_col) for t, f in tests]))


def held_out_mask(
    table: pd.DataFrame, columns: Sequence[str], seed: int, fraction: float
) -> np.ndarray:
    """Which rows of `table` are test rows: those whose keyed hash (BLAKE2b-64 under `seed`) of
    the row's text over `columns`, cells joined by U+001F, falls below `fraction` of 2**64.

    A function of each row's content alone: a table split over parties is split exactly as the
    pooled table is, whatever the partition (the pooled oracle's split is the union of the
    parties'), and no party needs the others' row counts or a global row order."""
    key = int(seed).to_bytes(8, "big")
    bound = int(fraction * 2.0**64)
    cells = [as_text(table[c]).astype(str).tolist() for c in columns]
    mask = np.empty(len(table), dtype=bool)
    for i, row in enumerate(zip(*cells, strict=True)):
        digest = hashlib.blake2b("\x1f".join(row).encode("utf-8"), digest_size=8, key=key)
        mask[i] = int.from_bytes(digest.digest(), "big") < bound
    return mask


def party_tables(
    table: pd.DataFrame,
    features: Sequence[str],
    class_col: str,
    cut: Mapping[str, Sequence[str]],
    taxonomies: Sequence[Taxonomy],
    dtypes: Mapping[str, str],
    seed: int,
    fraction: float,
    source: str,
) -> PartyTables:
    """One party's share of the protocol from its own table: raw training and test rows (split
    by :func:`held_out_mask`) and the same rows as the release prints them, each QID generalized
    to the label of `cut` that covers it and every column read as the release's `dtypes`
    (as :func:`fedanon.utility.pairing.release_in_raw_order` rebuilds a pooled release)."""
    columns = [*features, class_col]
    _require_columns(table, columns, source)
    raw = table[columns].reset_index(drop=True)
    test = held_out_mask(raw, columns, seed, fraction)
    labels = {q: np.asarray(list(v), dtype=object) for q, v in cut.items()}
    released = generalized_rows(raw, columns, labels, taxonomies, source)
    try:
        released = released.astype({c: dtypes[c] for c in columns})
    except (KeyError, ValueError, TypeError) as exc:
        raise FedanonError(f"{source}: rows do not read as the release's columns: {exc}") from None
    return PartyTables(raw[~test], raw[test], released[~test], released[test])


def error_counts(
    model: C45, table: pd.DataFrame, features: Sequence[str], class_col: str
) -> np.ndarray:
    """(errors, rows) of `model` on `table`: what a party adds to a figure's secure sum."""
    if len(table) == 0:
        return np.zeros(2, dtype=np.int64)
    wrong = int((model.predict(table[list(features)]) != table[class_col].to_numpy()).sum())
    return np.array([wrong, len(table)], dtype=np.int64)


def percent(totals: np.ndarray) -> float:
    """A figure from the summed (errors, rows): the pooled np.mean of 0/1 errors, exactly."""
    errors, rows = (int(v) for v in totals)
    if rows == 0:
        raise FedanonError("classification error on an empty test table is undefined")
    return 100.0 * (errors / rows)


def pooled_figures(
    raw: pd.DataFrame,
    released: pd.DataFrame,
    class_col: str,
    qids: Sequence[str],
    numeric_qids: Sequence[str],
    seed: int,
    fraction: float,
) -> dict[str, float | int]:
    """The centralized protocol (:func:`fedanon.utility.evaluation.evaluate_release`) on the
    pooled table, split by :func:`held_out_mask` as the parties split theirs: what the
    federated ``evaluate`` job must equal. `released` holds the release of `raw`'s rows in
    raw order (:func:`fedanon.utility.pairing.release_in_raw_order`), both with the same
    columns (the features in the release's order, as the job sends them)."""
    columns = [*(c for c in raw.columns if c != class_col), class_col]
    test = held_out_mask(raw, columns, seed, fraction)
    numbers = raw.copy()
    for column in numeric_qids:
        numbers[column] = pd.to_numeric(numbers[column])
    return evaluate_release(
        numbers[~test],
        numbers[test],
        released[~test],
        released[test],
        class_col,
        qids,
        numeric_qids,
    )
