"""Numerical taxonomies refuse what they cannot place: values outside the leaves, empty intervals.

A value below the lowest leaf must not be encoded as atom -1 (numpy would then index the last
leaf, silently generalizing it as the highest interval); an interval [a, a) holds no value and
would leave a node no record can reach.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.taxonomy.tree import Spec, Taxonomy


def _age_tree() -> Taxonomy:
    return Taxonomy.numeric(
        "age",
        Spec("root", lo=0, hi=100, children=[Spec("a", lo=0, hi=50), Spec("b", lo=50, hi=100)]),
    )


def test_values_inside_the_leaves_get_their_leaf():
    atoms = _age_tree().encode(pd.Series(["0", "49.5", "50", "99"]))
    assert atoms.tolist() == [0, 0, 1, 1]


@pytest.mark.parametrize("value", ["-5", "-0.001", "100", "250"])
def test_value_outside_every_leaf_is_an_error_naming_value_and_column(value):
    column = pd.Series(["10", value, "60"])
    message = f"column 'age': value '{value}' (first at row 2) lies outside every leaf interval"
    with pytest.raises(FedanonError, match=re.escape(message)):
        _age_tree().encode(column)


@pytest.mark.parametrize(
    "leaves",
    [
        [Spec("empty", lo=0, hi=0), Spec("rest", lo=0, hi=100)],
        [Spec("low", lo=0, hi=50), Spec("empty", lo=50, hi=50), Spec("high", lo=50, hi=100)],
    ],
)
def test_empty_interval_is_refused(leaves):
    with pytest.raises(FedanonError, match=re.escape("bad interval 'empty' (need lo < hi)")):
        Taxonomy.numeric("age", Spec("root", lo=0, hi=100, children=leaves))


def test_empty_root_interval_is_refused():
    with pytest.raises(FedanonError, match="need lo < hi"):
        Taxonomy.numeric("age", Spec("root", lo=7, hi=7))
