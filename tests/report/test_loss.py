"""NCP of released cells, priced by hand on small taxonomies (docs/steward-guide.md)."""

from __future__ import annotations

import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.report.loss import attribute_loss, overall_ncp, suppression_loss
from fedanon.taxonomy.tree import Spec, Taxonomy


def _jobs() -> Taxonomy:
    # Any (3 leaves) -> Blue (2 leaves: Janitor, Mover), White (1 leaf: Clerk)
    return Taxonomy.categorical(
        "job",
        Spec(
            "Any", [Spec("Blue", [Spec("Janitor"), Spec("Mover")]), Spec("White", [Spec("Clerk")])]
        ),
    )


def _age() -> Taxonomy:
    return Taxonomy.numeric(
        "age",
        Spec(
            "[0-100)", [Spec("[0-50)", lo=0, hi=50), Spec("[50-100)", lo=50, hi=100)], lo=0, hi=100
        ),
    )


def test_categorical_ncp_is_leaves_minus_one_over_domain_minus_one() -> None:
    # Janitor 0, Blue (2-1)/(3-1) = 0.5, Any 1, Clerk 0 -> mean 1.5 / 4
    loss = attribute_loss(pd.Series(["Janitor", "Blue", "Any", "Clerk"]), _jobs())
    assert loss.ncp == pytest.approx(0.375)
    assert loss.kept_values == ["Any", "Blue", "Clerk", "Janitor"]


def test_numeric_ncp_is_interval_width_over_domain_width() -> None:
    # [0-50) 0.5, raw 7 is 0, [0-100) 1, a dynamic-style interval [10-35) 0.25 -> 1.75 / 4
    loss = attribute_loss(pd.Series(["[0-50)", "7", "[0-100)", "[10-35)"]), _age())
    assert loss.ncp == pytest.approx(0.4375)


def test_overall_ncp_weighs_every_attribute_equally() -> None:
    job = attribute_loss(pd.Series(["Any", "Any"]), _jobs())
    age = attribute_loss(pd.Series(["7", "8"]), _age())
    assert overall_ncp([job, age]) == pytest.approx(0.5)
    assert overall_ncp([]) is None


def test_a_value_outside_the_taxonomy_is_a_one_line_error() -> None:
    with pytest.raises(FedanonError, match="'Pilot' of 'job' is not a node"):
        attribute_loss(pd.Series(["Pilot"]), _jobs())
    with pytest.raises(FedanonError, match="neither a number nor an interval"):
        attribute_loss(pd.Series(["old"]), _age())


def test_suppression_ncp_prices_the_marker_as_one_and_intervals_by_raw_range() -> None:
    raw = pd.Series(["0", "10", "20", "40"])  # range 40
    release = pd.Series(["?", "[0, 20]", "[0-10)", "40"], name="age")
    loss = suppression_loss(release, raw, "?")
    assert loss.ncp == pytest.approx((1 + 0.5 + 0.25 + 0) / 4)
    assert loss.suppressed_share == pytest.approx(0.25)
    assert loss.kept_values == ["40", "[0, 20]", "[0-10)"]


def test_suppression_ncp_of_a_categorical_column_counts_only_the_marker() -> None:
    loss = suppression_loss(pd.Series(["a", "*", "*", "b"], name="x"), pd.Series(list("abcd")), "*")
    assert loss.ncp == pytest.approx(0.5) and loss.suppressed_share == pytest.approx(0.5)
