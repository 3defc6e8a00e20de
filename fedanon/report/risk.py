"""Re-identification risk of a released table in ARX's terms, from its equivalence classes.

An equivalence class is a set of released records equal on every QID. With f_j the size of
the class of record j and n the number of records (docs/steward-guide.md, "Risk"):

* prosecutor risk (the attacker knows the person is in the release): record risk 1/f_j;
  highest = 1 / smallest class, average = (number of classes) / n; records at risk = share of
  records whose risk exceeds a threshold;
* marketer risk (the attacker re-identifies as many records as possible): the expected share
  re-identified. Without a population table the release is taken as the population, where it is
  (number of classes) / n (ARX's sample-only estimate);
* journalist risk (the attacker does not know who is in the release) needs the size F_j of each
  class in the population the release is drawn from; without a population table it is not
  defined and the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fedanon.tables import Table
from fedanon.text import factorize, text_codes

# Column -> (codes, distinct strings) of its cells as text (fedanon.text.text_codes): a report
# encodes each column once and every figure reads the codes.
Coded = Mapping[str, tuple[np.ndarray, np.ndarray]]


def coded_column(release: Table, column: str, coded: Coded | None) -> tuple[np.ndarray, np.ndarray]:
    """The column's text codes from `coded` when there, else encoded now."""
    if coded is not None and column in coded:
        return coded[column]
    return text_codes(release[column])


# Class-size buckets of the distribution chart: [lo, hi) pairs; hi None = no upper end.
SIZE_BUCKETS: tuple[tuple[int, int | None], ...] = (
    (1, 2),
    (2, 3),
    (3, 5),
    (5, 10),
    (10, 20),
    (20, 50),
    (50, 100),
    (100, 1000),
    (1000, None),
)


@dataclass(frozen=True)
class Classes:
    """Equivalence-class id of every record and the size of every class."""

    ids: np.ndarray
    sizes: np.ndarray


def equivalence_classes(release: Table, qids: Sequence[str], coded: Coded | None = None) -> Classes:
    """Group the records by their released QID strings (vectorized factorization)."""
    key = np.zeros(len(release), dtype=np.int64)
    for column in qids:
        codes, uniques = coded_column(release, column, coded)
        key, _ = factorize(key * max(1, len(uniques)) + codes)
    return Classes(key, np.bincount(key) if len(key) else np.zeros(0, dtype=np.int64))


def prosecutor_risk(classes: Classes, threshold: float) -> dict[str, float | int]:
    """Highest and average record risk and the records whose risk exceeds `threshold`."""
    n = int(classes.sizes.sum())
    record_risk = 1.0 / classes.sizes[classes.ids]
    at_risk = int(np.count_nonzero(record_risk > threshold))
    return {
        "highest": float(1.0 / classes.sizes.min()),
        "average": float(len(classes.sizes) / n),
        "threshold": float(threshold),
        "records_at_risk": at_risk,
        "records_at_risk_share": at_risk / n,
    }


def size_distribution(classes: Classes) -> list[dict[str, int | None]]:
    """Classes and records per class-size bucket (every bucket listed, empty ones too)."""
    out: list[dict[str, int | None]] = []
    for lo, hi in SIZE_BUCKETS:
        inside = (classes.sizes >= lo) & (classes.sizes < (hi if hi is not None else np.inf))
        out.append(
            {
                "min_size": lo,
                "max_size": None if hi is None else hi - 1,
                "classes": int(np.count_nonzero(inside)),
                "records": int(classes.sizes[inside].sum()),
            }
        )
    return out


def max_confidence(
    release: Table,
    classes: Classes,
    sensitive: Sequence[tuple[str, str]],
    coded: Coded | None = None,
) -> list[dict[str, object]]:
    """Per sensitive value s: the highest share of s in any equivalence class, and that class."""
    out: list[dict[str, object]] = []
    for column, value in sensitive:
        codes, uniques = coded_column(release, column, coded)
        hits = np.bincount(
            classes.ids[(uniques == value)[codes]],
            minlength=len(classes.sizes),
        )
        share = hits / classes.sizes
        top = int(np.argmax(share))
        out.append(
            {
                "column": column,
                "value": value,
                "confidence": float(share[top]),
                "class_size": int(classes.sizes[top]),
            }
        )
    return out


def class_purity_error(
    release: Table, classes: Classes, class_column: str, coded: Coded | None = None
) -> float:
    """Iyengar's classification metric: share of records not of their class's majority label.

    A cheap, model-free utility figure for a release meant for classification: a classifier
    that can only see the released QIDs predicts at best the majority label of each class.
    """
    labels, _ = coded_column(release, class_column, coded)
    n_labels = int(labels.max()) + 1
    table = np.bincount(classes.ids * n_labels + labels, minlength=len(classes.sizes) * n_labels)
    majority = table.reshape(len(classes.sizes), n_labels).max(axis=1).sum()
    return float(1.0 - majority / len(release))
