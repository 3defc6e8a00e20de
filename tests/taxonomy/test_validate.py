"""`validate_table`: a table that does not fit its taxonomy fails with one precise line."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.toml_format import parse_toml_taxonomy
from fedanon.taxonomy.validate import validate_table

TOML = '''\
qids = ["age", "sex", "stay"]

[sensitive]
diagnosis = ["HIV"]

[class]
column = "readmitted"
values = ["no", "yes"]

[attributes.sex]
kind = "categorical"
tree = """
Any
  F
  M
"""

[attributes.age]
kind = "numeric"
tree = """
[0, 100)
  [0, 50)
  [50, 100)
"""

[attributes.stay]
kind = "numeric"
dynamic = true
'''


@pytest.fixture
def tf() -> TaxonomyFile:
    return parse_toml_taxonomy(TOML, "h.toml")


def table(**changes: list[object]) -> pd.DataFrame:
    data: dict[str, list[object]] = {
        "age": [10, 60, 99],
        "sex": ["F", "M", "F"],
        "stay": [1, 2.5, 30],
        "diagnosis": ["Flu", "HIV", "Flu"],
        "readmitted": ["no", "yes", "no"],
    }
    data.update(changes)
    return pd.DataFrame(data)


def test_fitting_table_passes(tf: TaxonomyFile) -> None:
    validate_table(table(), tf)
    validate_table(table(sex=["X", "X", "X"]), tf, qids=["age"])  # only the chosen QIDs


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"sex": ["F", "M", "U"]}, "column 'sex': value 'U' (first at row 3) is not a leaf"),
        ({"age": [10, 100, 5]}, "column 'age': value '100' (first at row 2) lies outside every"),
        ({"age": [10, "old", 5]}, "column 'age': value 'old' (first at row 2) is not a number"),
        ({"stay": [1, None, 2]}, "column 'stay': value 'nan' (first at row 2) is not a finite"),
        ({"stay": ["x", 1, 2]}, "column 'stay': value 'x' (first at row 1) is not a finite"),
        (
            {"readmitted": ["no", "yes.", "no"]},
            "column 'readmitted': value 'yes.' (first at row 2) is not a class value (no, yes)",
        ),
    ],
)
def test_bad_values(tf: TaxonomyFile, changes: dict[str, list[object]], message: str) -> None:
    with pytest.raises(FedanonError, match=re.escape(message)):
        validate_table(table(**changes), tf)


@pytest.mark.parametrize(
    ("drop", "message"),
    [
        (["sex"], "the table has no QID column 'sex'"),
        (["sex", "stay"], "the table has no QID column 'sex', 'stay'"),
        (["diagnosis"], "the table has no sensitive column 'diagnosis' (for diagnosis=HIV)"),
        (["readmitted"], "the table has no class column 'readmitted'"),
    ],
)
def test_missing_columns(tf: TaxonomyFile, drop: list[str], message: str) -> None:
    with pytest.raises(FedanonError) as info:
        validate_table(table().drop(columns=drop), tf)
    assert str(info.value) == message


def test_qid_without_taxonomy(tf: TaxonomyFile) -> None:
    df = table(weight=[1, 2, 3])
    with pytest.raises(FedanonError, match=re.escape("h.toml: QID 'weight' has no taxonomy")):
        validate_table(df, tf, qids=["weight"])


def test_no_qids_anywhere() -> None:
    tf = parse_toml_taxonomy('[attributes.a]\nkind = "categorical"\ntree = "x"\n', "a.toml")
    with pytest.raises(
        FedanonError, match=re.escape("a.toml: no QIDs given and the taxonomy file lists")
    ):
        validate_table(pd.DataFrame({"a": ["x"]}), tf)
