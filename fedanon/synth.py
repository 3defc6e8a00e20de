"""A deterministic synthetic hospital table: the embedded default data of ``fedanon demo``.

The demo must run without downloads and without real patients, yet anonymizing it should mean
something: the data has the dependencies a real admissions table has (age drives marital status,
employment, admission type and diagnosis; admission type and diagnosis drive length of stay; the
readmission outcome depends on several of them, with noise), so generalizing the QIDs visibly
trades privacy against classification utility. Every draw comes from one seeded numpy Generator,
so a seed always gives the same table. See docs/synthetic-data.md for the model and its rationale.

The trees, QIDs, sensitive values and class live in the package file ``fedanon/data/hospital.toml``
(:func:`hospital_taxonomy_path`); the value names below must stay leaves of those trees.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from fedanon.errors import FedanonError

DEFAULT_ROWS = 6000

COLUMNS = [
    "patient_id", "age", "sex", "postcode", "country_of_birth", "marital_status",
    "employment", "admission_type", "length_of_stay", "diagnosis", "readmitted",
]  # fmt: skip

# ------------------------------------------------------------------------- where people live
# Postcodes with their share of patients; region A is urban, B suburban, C rural.
POSTCODES = {
    "A1A": 6, "A1B": 5, "A1C": 5, "A1D": 4, "A2A": 6, "A2B": 5, "A2C": 4, "A3A": 5, "A3B": 5,
    "B1A": 5, "B1B": 4, "B1C": 4, "B2A": 5, "B2B": 4, "B3A": 5, "B3B": 4, "B3C": 4,
    "C1A": 4, "C1B": 3, "C2A": 4, "C2B": 3, "C2C": 2,
}  # fmt: skip
REGIONS = ["A", "B", "C"]

# Relative weight of each age 0..100 by region: hospital patients skew old, rural ones more so,
# urban ones have more young adults.
_AGE_BANDS = [(0, 18, 0.6), (18, 45, 0.8), (45, 65, 1.2), (65, 85, 1.8), (85, 101, 0.7)]
_REGION_AGE_BOOST = {"A": (18, 45, 1.3), "B": (0, 18, 1.2), "C": (65, 101, 1.5)}

# Share born abroad by region, and where.
_FOREIGN_SHARE = {"A": 0.35, "B": 0.20, "C": 0.08}
COUNTRIES = {
    "United-States": 6, "Mexico": 3, "Haiti": 5, "Brazil": 2,
    "France": 8, "United-Kingdom": 4, "Italy": 5, "Portugal": 3, "Poland": 2,
    "China": 7, "India": 5, "Philippines": 4, "Vietnam": 3, "Lebanon": 3,
    "Morocco": 5, "Algeria": 4, "Nigeria": 2,
}  # fmt: skip

# ------------------------------------------------------------------------- life stage by age
# Age bands used by the conditional tables below: child, young adult, adult, senior, elderly.
_LIFE_STAGES = [0, 16, 25, 45, 65, 80]

MARITAL = ["Married", "Common-law", "Never-married", "Separated", "Divorced", "Widowed"]
_MARITAL_BY_STAGE = np.array([
    [0, 0, 100, 0, 0, 0],
    [8, 14, 75, 2, 1, 0],
    [45, 18, 22, 6, 8, 1],
    [55, 10, 10, 6, 14, 5],
    [50, 4, 6, 4, 12, 24],
    [30, 2, 5, 2, 8, 53],
], dtype=float)  # fmt: skip

EMPLOYMENT = [
    "Full-time", "Part-time", "Self-employed", "Unemployed", "Student", "Retired", "Child",
]  # fmt: skip
_EMPLOYMENT_BY_STAGE = np.array([
    [0, 0, 0, 0, 0, 0, 100],
    [15, 25, 2, 10, 48, 0, 0],
    [60, 12, 10, 10, 4, 4, 0],
    [55, 10, 12, 9, 1, 13, 0],
    [4, 5, 5, 1, 0, 85, 0],
    [1, 1, 2, 0, 0, 96, 0],
], dtype=float)  # fmt: skip

# ------------------------------------------------------------------------- the hospital stay
ADMISSIONS = ["Elective", "Day-surgery", "Emergency", "Urgent", "Transfer", "Maternity"]
_ADMISSION_BY_STAGE = np.array([
    [15, 15, 45, 20, 5, 0],
    [20, 22, 38, 15, 5, 0],
    [25, 22, 33, 15, 5, 0],
    [25, 18, 35, 15, 7, 0],
    [20, 10, 45, 15, 10, 0],
    [12, 5, 53, 17, 13, 0],
], dtype=float)  # fmt: skip
_MATERNITY_SHARE = 0.30  # of admissions of women aged 18-44

DIAGNOSES = [
    "Flu", "Pneumonia", "Fracture", "Appendicitis", "Asthma", "Diabetes", "Heart-disease",
    "Stroke", "Cancer", "Depression", "Schizophrenia", "HIV", "Childbirth",
]  # fmt: skip
# Weight of each diagnosis (columns as DIAGNOSES) by kind of admission: planned, unplanned.
_DIAGNOSIS_BY_ADMISSION = np.array([
    [2, 3, 8, 6, 4, 14, 16, 2, 24, 6, 3, 3, 0],
    [14, 12, 16, 8, 7, 6, 12, 8, 5, 5, 4, 3, 0],
], dtype=float)  # fmt: skip
# Multiplier of each diagnosis by life stage (rows as _LIFE_STAGES).
_DIAGNOSIS_BY_STAGE = np.array([
    [2.0, 1.2, 1.5, 2.0, 3.0, 0.2, 0.05, 0.02, 0.2, 0.3, 0.05, 0.1, 0],
    [1.2, 0.6, 2.0, 2.0, 1.5, 0.4, 0.1, 0.1, 0.3, 2.0, 2.5, 1.5, 0],
    [0.8, 0.6, 1.2, 1.0, 1.0, 0.8, 0.6, 0.4, 0.8, 1.6, 1.6, 1.5, 0],
    [0.6, 0.8, 0.8, 0.5, 0.8, 1.5, 1.4, 1.2, 1.4, 0.9, 0.7, 0.6, 0],
    [0.8, 1.6, 1.0, 0.3, 0.6, 1.6, 1.9, 2.0, 1.4, 0.6, 0.3, 0.1, 0],
    [1.0, 2.4, 1.6, 0.2, 0.5, 1.3, 2.2, 2.6, 1.1, 0.6, 0.2, 0.05, 0],
])  # fmt: skip
_DIAGNOSIS_MALE = {"HIV": 2.5, "Heart-disease": 1.3, "Schizophrenia": 1.4, "Depression": 0.6}

# Mean length of stay in days by admission type (as ADMISSIONS) and multiplier by diagnosis.
_STAY_BY_ADMISSION = np.array([3.0, 0.3, 5.0, 4.0, 8.0, 2.0])
_STAY_BY_DIAGNOSIS = np.array([0.6, 1.6, 1.2, 0.8, 0.7, 1.2, 1.5, 2.5, 2.0, 1.8, 3.0, 1.6, 1.0])
MAX_STAY = 90

# Readmission log-odds: intercept, per decade of age, per day of stay (up to 30), and effects.
_READMIT_INTERCEPT = -2.45
_READMIT_PER_DECADE = 0.12
_READMIT_PER_DAY = 0.035
_READMIT_ADMISSION = np.array([-0.5, -1.0, 0.6, 0.4, 0.7, -0.8])
_READMIT_DIAGNOSIS = np.array([-0.3, 0.4, -0.2, -0.6, 0.0, 0.5, 0.8, 0.7, 0.9, 0.4, 0.8, 0.6, -0.5])
_READMIT_UNEMPLOYED = 0.3


def hospital_taxonomy_path() -> Path:
    """The taxonomy file of the synthetic data (package data, so it ships with the wheel)."""
    return Path(str(files("fedanon").joinpath("data", "hospital.toml")))


def generate_hospital(n_rows: int = DEFAULT_ROWS, seed: int = 7) -> pd.DataFrame:
    """A synthetic admissions table of `n_rows` patients; the same seed gives the same table.

    Columns: ``patient_id`` (an identifier the anonymizer drops), the QIDs ``age``, ``sex``,
    ``postcode``, ``country_of_birth``, ``marital_status``, ``employment``, ``admission_type``,
    ``length_of_stay``, the sensitive ``diagnosis`` and the class ``readmitted`` (yes/no).
    """
    if n_rows < 1:
        raise FedanonError(f"the synthetic table needs at least one row (got {n_rows})")
    rng = np.random.default_rng(seed)
    postcode = _choose(rng, list(POSTCODES), np.array(list(POSTCODES.values()), float), n_rows)
    region = np.array([p[0] for p in postcode])
    age = _ages(rng, region)
    female = rng.random(n_rows) < 0.52
    stage = np.searchsorted(_LIFE_STAGES, age, side="right") - 1
    foreign = rng.random(n_rows) < np.vectorize(_FOREIGN_SHARE.get)(region)
    countries = _choose(rng, list(COUNTRIES), np.array(list(COUNTRIES.values()), float), n_rows)
    marital = _pick(rng, _MARITAL_BY_STAGE[stage])
    employment = _pick(rng, _EMPLOYMENT_BY_STAGE[stage])
    admission = _admissions(rng, stage, age, female)
    diagnosis = _diagnoses(rng, stage, admission, female)
    stay = _stays(rng, age, admission, diagnosis)
    readmitted = _readmissions(rng, age, stay, admission, diagnosis, employment)
    return pd.DataFrame(
        {
            "patient_id": [f"P{i:06d}" for i in range(1, n_rows + 1)],
            "age": age,
            "sex": np.where(female, "Female", "Male").astype(object),
            "postcode": postcode.astype(object),
            "country_of_birth": np.where(foreign, countries, "Canada").astype(object),
            "marital_status": np.array(MARITAL, dtype=object)[marital],
            "employment": np.array(EMPLOYMENT, dtype=object)[employment],
            "admission_type": np.array(ADMISSIONS, dtype=object)[admission],
            "length_of_stay": stay,
            "diagnosis": np.array(DIAGNOSES, dtype=object)[diagnosis],
            "readmitted": np.where(readmitted, "yes", "no").astype(object),
        },
        columns=COLUMNS,
    )


#: Rows generated (and held) at a time by :func:`write_hospital_parquet`: ~1 GB of Python strings.
PARQUET_CHUNK_ROWS = 500_000
#: The columns of the Parquet dataset: every column but ``patient_id`` (a counter that restarts
#: in every chunk, so not an identifier of the dataset), all as text.
PARQUET_SCHEMA = pa.schema([(name, pa.string()) for name in COLUMNS if name != "patient_id"])


def write_hospital_parquet(
    where: Path, rows: int, files: int, chunk: int = PARQUET_CHUNK_ROWS, seed: int = 0
) -> list[Path]:
    """The synthetic table of `rows` rows as a Parquet dataset of `files` files in `where`.

    Streams: each chunk of at most `chunk` rows is generated, written as its own row group and
    dropped before the next, so memory is one chunk's whatever `rows` is (100M rows in one
    frame do not fit a machine's memory). Chunk ``c`` of the dataset (numbered across files)
    uses seed ``seed + c``, so no two chunks repeat each other and the dataset is deterministic.
    Files are ``part-NNNN.parquet``, each written under a temporary name and renamed when
    complete (and removed on an error): an interrupted run leaves no partial file.
    """
    if rows < files or files < 1 or chunk < 1:
        raise FedanonError(f"cannot write {rows} rows as {files} files in chunks of {chunk}")
    where.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    first_chunk = 0
    for index in range(files):
        size = rows // files + (index < rows % files)
        path = where / f"part-{index:04d}.parquet"
        _write_hospital_file(path, size, seed + first_chunk, chunk)
        first_chunk += -(-size // chunk)
        written.append(path)
    return written


def _write_hospital_file(path: Path, rows: int, seed: int, chunk: int) -> None:
    partial = path.with_name(path.name + ".partial")
    try:
        with pq.ParquetWriter(partial, PARQUET_SCHEMA) as writer:
            for number, at in enumerate(range(0, rows, chunk)):
                frame = generate_hospital(min(chunk, rows - at), seed=seed + number)
                frame = frame.drop(columns=["patient_id"]).astype(str)
                writer.write_table(
                    pa.Table.from_pandas(frame, PARQUET_SCHEMA, preserve_index=False)
                )
                del frame
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, path)


def _pick(rng: np.random.Generator, weights: np.ndarray) -> np.ndarray:
    """One index per row of `weights` (n x k, not necessarily normalized), drawn in one pass."""
    cumulative = np.cumsum(weights, axis=1)
    u = rng.random(len(weights)) * cumulative[:, -1]
    return np.minimum((cumulative <= u[:, None]).sum(axis=1), weights.shape[1] - 1)


def _choose(rng: np.random.Generator, values: list[str], weights: np.ndarray, n: int) -> np.ndarray:
    return np.array(values)[_pick(rng, np.broadcast_to(weights, (n, len(values))))]


def _ages(rng: np.random.Generator, region: np.ndarray) -> np.ndarray:
    ages = np.arange(101)
    base = np.zeros(101)
    for lo, hi, weight in _AGE_BANDS:
        base[lo:hi] = weight
    weights = np.empty((len(region), 101))
    for name in REGIONS:
        lo, hi, boost = _REGION_AGE_BOOST[name]
        row = base.copy()
        row[lo:hi] *= boost
        weights[region == name] = row
    return ages[_pick(rng, weights)].astype(np.int64)


def _admissions(
    rng: np.random.Generator, stage: np.ndarray, age: np.ndarray, female: np.ndarray
) -> np.ndarray:
    weights = _ADMISSION_BY_STAGE[stage].copy()
    childbearing = female & (age >= 18) & (age < 45)
    maternity = ADMISSIONS.index("Maternity")
    others = weights[childbearing].sum(axis=1)
    weights[childbearing, maternity] = others * _MATERNITY_SHARE / (1 - _MATERNITY_SHARE)
    return _pick(rng, weights)


def _diagnoses(
    rng: np.random.Generator, stage: np.ndarray, admission: np.ndarray, female: np.ndarray
) -> np.ndarray:
    unplanned = np.isin(
        admission, [ADMISSIONS.index(a) for a in ("Emergency", "Urgent", "Transfer")]
    )
    weights = _DIAGNOSIS_BY_ADMISSION[unplanned.astype(int)] * _DIAGNOSIS_BY_STAGE[stage]
    for name, factor in _DIAGNOSIS_MALE.items():
        weights[~female, DIAGNOSES.index(name)] *= factor
    maternity = admission == ADMISSIONS.index("Maternity")
    weights[maternity] = 0.0
    weights[maternity, DIAGNOSES.index("Childbirth")] = 1.0
    return _pick(rng, weights)


def _stays(
    rng: np.random.Generator, age: np.ndarray, admission: np.ndarray, diagnosis: np.ndarray
) -> np.ndarray:
    """Over-dispersed counts (gamma-Poisson), as real lengths of stay are."""
    mean = (
        _STAY_BY_ADMISSION[admission]
        * _STAY_BY_DIAGNOSIS[diagnosis]
        * np.where(age >= 65, 1.4, 1.0)
    )
    days = rng.poisson(mean * rng.gamma(shape=2.0, scale=0.5, size=len(mean)))
    return np.minimum(days, MAX_STAY).astype(np.int64)


def _readmissions(
    rng: np.random.Generator,
    age: np.ndarray,
    stay: np.ndarray,
    admission: np.ndarray,
    diagnosis: np.ndarray,
    employment: np.ndarray,
) -> np.ndarray:
    log_odds = (
        _READMIT_INTERCEPT
        + _READMIT_PER_DECADE * age / 10
        + _READMIT_PER_DAY * np.minimum(stay, 30)
        + _READMIT_ADMISSION[admission]
        + _READMIT_DIAGNOSIS[diagnosis]
        + _READMIT_UNEMPLOYED * (employment == EMPLOYMENT.index("Unemployed"))
    )
    return rng.random(len(age)) < 1 / (1 + np.exp(-log_odds))
