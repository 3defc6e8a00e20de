"""ARX's own Adult job, the yardstick fedanon is measured against (bench/bench_arx.py): ARX's
Adult extract (semicolon-separated), ARX's hierarchies for it and the eight QIDs ARX's example
anonymizes. One definition for the benchmarks and the tests that pin or compare its releases."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fedanon.readers.datadir import data_dir, have_data
from fedanon.tables import Table, column_names
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.loader import load_taxonomy

QIDS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
]
CLASS_COLUMN = "salary-class"


def folder() -> Path:
    """Where the extract and the hierarchies live, under the data directory."""
    return data_dir() / "adult"


def available() -> bool:
    """True when the extract and its hierarchies are present."""
    return have_data("adult", "arx_adult.csv") and have_data("adult", "arx_hierarchies")


def read_extract() -> pd.DataFrame:
    """The extract, every column as text (30,162 rows)."""
    return pd.read_csv(folder() / "arx_adult.csv", sep=";", dtype=str)


def load_hierarchies(table: Table) -> TaxonomyFile:
    """ARX's hierarchies as a taxonomy file matched against `table`'s columns (a DataFrame or
    an Arrow table)."""
    return load_taxonomy(folder() / "arx_hierarchies", data_columns=column_names(table))
