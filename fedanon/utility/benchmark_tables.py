"""The kACTUS paper's benchmark tables, read from the shared data directory as text columns.

UCI files have no header; the column names below follow the UCI descriptions. Adult is the
45,222-record set without unknown values (``adult/adult_all.csv``): our C4.5 does not train on
missing values, and the LKC reproduction uses the same records.
"""

from __future__ import annotations

import pandas as pd

from fedanon.errors import FedanonError
from fedanon.readers.datadir import data_dir

GERMAN = [
    "checking", "duration", "history", "purpose", "amount", "savings", "employment",
    "installment-rate", "personal-status", "debtors", "residence", "property", "age",
    "installment-plans", "housing", "credits", "job", "liable", "telephone", "foreign", "class",
]  # fmt: skip
NURSERY = ["parents", "has_nurs", "form", "children", "housing", "finance", "social", "health",
           "class"]  # fmt: skip
PIMA = ["pregnancies", "glucose", "blood-pressure", "skin", "insulin", "bmi", "pedigree", "age",
        "class"]  # fmt: skip

_FILES = {
    "adult": ("adult/adult_all.csv", None, ","),
    "german": ("uci/german/german.data", GERMAN, " "),
    "nursery": ("uci/nursery/nursery.data", NURSERY, ","),
    "pima": ("uci/pima-indians-diabetes/pima-indians-diabetes.data", PIMA, ","),
}
TABLES = tuple(_FILES)


def load_table(name: str) -> pd.DataFrame:
    """One benchmark table with every column as text and the class column named ``class``."""
    if name not in _FILES:
        raise FedanonError(f"unknown benchmark table '{name}' (choose from {', '.join(TABLES)})")
    relative, names, sep = _FILES[name]
    path = data_dir() / relative
    if not path.exists():
        raise FedanonError(f"{path}: benchmark data not found (set FEDANON_DATA_DIR)")
    header = 0 if names is None else None
    table = pd.read_csv(
        path,
        sep=sep,
        header=header,
        names=names,
        dtype=str,
        keep_default_na=False,
        skipinitialspace=True,
    )
    return table.dropna(how="all").reset_index(drop=True)


def has_table(name: str) -> bool:
    return name in _FILES and (data_dir() / _FILES[name][0]).exists()
