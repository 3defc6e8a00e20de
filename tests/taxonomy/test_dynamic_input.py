"""`Taxonomy.dynamic` treats bad raw values as input errors, not crashes or NaN atoms."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.taxonomy.tree import Taxonomy


def test_numbers_as_text_are_accepted() -> None:
    tax = Taxonomy.dynamic("stay", pd.Series(["3", "1", "3", "2.5"], index=[7, 8, 9, 10]))
    assert tax.atom_values.tolist() == [1.0, 2.5, 3.0]
    assert tax.labels == ["[1-3]"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (pd.Series([1, 2, None], index=[5, 6, 7]), "value 'nan' (first at row 3)"),
        (np.array([1.0, np.nan]), "value 'nan' (first at row 2)"),
        (["1", None], "value 'None' (first at row 2)"),
        (["1", "two"], "value 'two' (first at row 2)"),
        ([np.inf], "value 'inf' (first at row 1)"),
    ],
)
def test_non_numbers_are_input_errors(values: object, message: str) -> None:
    with pytest.raises(
        FedanonError, match=re.escape(f"column 'stay': {message} is not a finite number")
    ):
        Taxonomy.dynamic("stay", values)  # type: ignore[arg-type]
