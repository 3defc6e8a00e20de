"""The kACTUS paper's benchmark tables, read from the shared data directory as text columns.

UCI files have no header; the column names below follow the UCI descriptions. Adult is the
45,222-record set without unknown values (``adult/adult_all.csv``): our C4.5 does not train on
missing values, and the LKC reproduction uses the same records.

Every other column is a QID (the paper's Table 2: "all the input attributes are
quasi-identifiers"). Glass's first UCI column, the record Id, is dropped: the file is sorted by
class, so the Id would predict the class, and the paper's 9 oxide/refractive-index inputs
(Weka's glass.arff) do not include it. Vehicle is the nine UCI files ``xaa..xai.dat``
concatenated (846 records; the paper's Table 1 prints 946).
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
GLASS = ["id", "RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe", "class"]
IONOSPHERE = [*(f"a{i:02d}" for i in range(1, 35)), "class"]
TIC_TAC_TOE = ["top-left", "top-middle", "top-right", "middle-left", "middle-middle",
               "middle-right", "bottom-left", "bottom-middle", "bottom-right", "class"]  # fmt: skip
VEHICLE = ["compactness", "circularity", "distance-circularity", "radius-ratio",
           "pr-axis-aspect-ratio", "max-length-aspect-ratio", "scatter-ratio", "elongatedness",
           "pr-axis-rectangularity", "max-length-rectangularity", "scaled-variance-major",
           "scaled-variance-minor", "scaled-radius-of-gyration", "skewness-about-major",
           "skewness-about-minor", "kurtosis-about-major", "kurtosis-about-minor",
           "hollows-ratio", "class"]  # fmt: skip
WAVEFORM = [*(f"x{i:02d}" for i in range(1, 41)), "class"]

_FILES = {
    "adult": ("adult/adult_all.csv", None, ","),
    "german": ("uci/german/german.data", GERMAN, " "),
    "nursery": ("uci/nursery/nursery.data", NURSERY, ","),
    "pima": ("uci/pima-indians-diabetes/pima-indians-diabetes.data", PIMA, ","),
    "glass": ("uci/glass/glass.data", GLASS, ","),
    "ionosphere": ("uci/ionosphere/ionosphere.data", IONOSPHERE, ","),
    "tic-tac-toe": ("uci/tic-tac-toe/tic-tac-toe.data", TIC_TAC_TOE, ","),
    "vehicle": ("uci/vehicle/xaa.dat", VEHICLE, r"\s+"),
    "waveform": ("uci/waveform/waveform-+noise.data", WAVEFORM, ","),
}
_VEHICLE_PARTS = [f"xa{c}.dat" for c in "abcdefghi"]
_DROPPED = {"glass": ["id"]}
TABLES = tuple(_FILES)


def load_table(name: str) -> pd.DataFrame:
    """One benchmark table with every column as text and the class column named ``class``."""
    if name not in _FILES:
        raise FedanonError(f"unknown benchmark table '{name}' (choose from {', '.join(TABLES)})")
    relative, names, sep = _FILES[name]
    path = data_dir() / relative
    if not path.exists():
        raise FedanonError(f"{path}: benchmark data not found (set FEDANON_DATA_DIR)")
    paths = [path.parent / part for part in _VEHICLE_PARTS] if name == "vehicle" else [path]
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise FedanonError(f"{missing[0]}: benchmark data not found (set FEDANON_DATA_DIR)")
    header = 0 if names is None else None
    parts = [
        pd.read_csv(
            p,
            sep=sep,
            header=header,
            names=names,
            dtype=str,
            keep_default_na=False,
            skipinitialspace=True,
            engine="python" if sep == r"\s+" else "c",
        )
        for p in paths
    ]
    table = pd.concat(parts, ignore_index=True).drop(columns=_DROPPED.get(name, []))
    return table.dropna(how="all").reset_index(drop=True)


def has_table(name: str) -> bool:
    return name in _FILES and (data_dir() / _FILES[name][0]).exists()
