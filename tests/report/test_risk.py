"""Risk figures on a table whose equivalence classes are known by construction."""

from __future__ import annotations

import pandas as pd
import pytest

from fedanon.report.risk import (
    class_purity_error,
    equivalence_classes,
    max_confidence,
    prosecutor_risk,
    size_distribution,
)

# Classes on (a, b): (x, 1) has 1 record, (x, 2) has 2, (y, 1) has 3 -- 6 records, 3 classes.
TABLE = pd.DataFrame(
    {
        "a": ["x", "x", "x", "y", "y", "y"],
        "b": ["1", "2", "2", "1", "1", "1"],
        "disease": ["HIV", "HIV", "Flu", "HIV", "Flu", "Flu"],
        "outcome": ["yes", "no", "no", "yes", "yes", "no"],
    }
)


def test_classes_are_the_records_equal_on_every_qid() -> None:
    classes = equivalence_classes(TABLE, ["a", "b"])
    assert sorted(classes.sizes.tolist()) == [1, 2, 3]
    assert classes.ids[1] == classes.ids[2] != classes.ids[0]


def test_prosecutor_risk_highest_average_and_records_at_risk() -> None:
    risk = prosecutor_risk(equivalence_classes(TABLE, ["a", "b"]), threshold=0.4)
    assert risk["highest"] == 1.0
    assert risk["average"] == pytest.approx(3 / 6)  # mean of 1, 1/2, 1/2, 1/3, 1/3, 1/3
    assert risk["records_at_risk"] == 3  # risks 1 and 1/2 exceed 0.4; 1/3 does not
    assert risk["records_at_risk_share"] == pytest.approx(0.5)


def test_a_record_exactly_at_the_threshold_is_not_at_risk() -> None:
    risk = prosecutor_risk(equivalence_classes(TABLE, ["a", "b"]), threshold=0.5)
    assert risk["records_at_risk"] == 1


def test_size_distribution_buckets_classes_and_records() -> None:
    buckets = size_distribution(equivalence_classes(TABLE, ["a", "b"]))
    by_lo = {b["min_size"]: (b["classes"], b["records"]) for b in buckets}
    assert by_lo[1] == (1, 1) and by_lo[2] == (1, 2) and by_lo[3] == (1, 3)
    assert sum(b["records"] or 0 for b in buckets) == 6


def test_max_confidence_is_the_highest_share_in_a_class() -> None:
    classes = equivalence_classes(TABLE, ["a", "b"])
    [hiv] = max_confidence(TABLE, classes, [("disease", "HIV")])
    assert hiv["confidence"] == 1.0 and hiv["class_size"] == 1  # the lone (x, 1) record
    [flu] = max_confidence(TABLE, classes, [("disease", "Flu")])
    assert flu["confidence"] == pytest.approx(2 / 3)


def test_classification_metric_counts_records_off_their_class_majority() -> None:
    # (x,1): yes -> 0 off; (x,2): no,no -> 0 off; (y,1): yes,yes,no -> 1 off => 1/6
    classes = equivalence_classes(TABLE, ["a", "b"])
    assert class_purity_error(TABLE, classes, "outcome") == pytest.approx(1 / 6)
