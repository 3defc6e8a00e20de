"""The synthetic hospital table: deterministic, valid for its own taxonomy, and correlated."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.synth import COLUMNS, DEFAULT_ROWS, generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.loader import load_taxonomy
from fedanon.taxonomy.validate import validate_table

QIDS = [
    "age", "sex", "postcode", "country_of_birth", "marital_status",
    "employment", "admission_type", "length_of_stay",
]  # fmt: skip


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return generate_hospital(DEFAULT_ROWS)


@pytest.fixture(scope="module")
def taxonomy() -> TaxonomyFile:
    return load_taxonomy(hospital_taxonomy_path())


def readmission_rate(df: pd.DataFrame) -> float:
    return float((df["readmitted"] == "yes").mean())


def test_same_seed_same_table(table: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(generate_hospital(DEFAULT_ROWS, seed=7), table)


def test_different_seeds_differ(table: pd.DataFrame) -> None:
    other = generate_hospital(DEFAULT_ROWS, seed=8)
    for column in COLUMNS[1:]:  # patient ids are sequential by design
        assert not other[column].equals(table[column]), column


def test_shape_and_ids(table: pd.DataFrame) -> None:
    assert list(table.columns) == COLUMNS
    assert len(table) == DEFAULT_ROWS
    assert table["patient_id"].is_unique
    assert table["age"].between(0, 100).all()
    assert len(generate_hospital(1)) == 1


def test_rejects_empty_table() -> None:
    with pytest.raises(FedanonError, match="at least one row"):
        generate_hospital(0)


def test_taxonomy_file_is_package_data(taxonomy: TaxonomyFile) -> None:
    path = hospital_taxonomy_path()
    assert path.is_file() and path.parent.name == "data" and path.parent.parent.name == "fedanon"
    assert taxonomy.qids == QIDS
    assert taxonomy.sensitive is not None
    assert [str(s) for s in taxonomy.sensitive] == ["diagnosis=HIV", "diagnosis=Schizophrenia"]
    assert (taxonomy.class_column, taxonomy.class_values) == ("readmitted", ["no", "yes"])


def test_every_value_encodes(table: pd.DataFrame, taxonomy: TaxonomyFile) -> None:
    validate_table(table, taxonomy)


def test_every_leaf_occurs(table: pd.DataFrame, taxonomy: TaxonomyFile) -> None:
    """No dead branches: each categorical leaf is a value of the default table."""
    for name, tax in taxonomy.taxonomies.items():
        if tax.kind == "categorical":
            assert set(tax.atom_labels) == set(table[name]), name


def test_survives_a_csv_round_trip(
    table: pd.DataFrame, taxonomy: TaxonomyFile, tmp_path: Path
) -> None:
    path = tmp_path / "hospital.csv"
    table.to_csv(path, index=False)
    validate_table(pd.read_csv(path, engine="pyarrow"), taxonomy)


@pytest.mark.parametrize("seed", [7, 11, 12345])
def test_feasible_for_lkc_demo_parameters(seed: int) -> None:
    """The fully generalized table must already satisfy K <= 20 and C >= 0.3 with room to spare."""
    df = generate_hospital(DEFAULT_ROWS, seed=seed)
    assert 0.25 <= readmission_rate(df) <= 0.35
    shares = df["diagnosis"].value_counts(normalize=True)
    assert 0.01 <= shares["HIV"] <= 0.05
    assert 0.01 <= shares["Schizophrenia"] <= 0.05


@pytest.mark.parametrize("seed", [7, 11, 12345])
def test_outcome_depends_on_admission_and_age(seed: int) -> None:
    df = generate_hospital(DEFAULT_ROWS, seed=seed)
    unplanned = df["admission_type"].isin(["Emergency", "Urgent", "Transfer"])
    planned = df["admission_type"].isin(["Elective", "Day-surgery"])
    assert readmission_rate(df[unplanned]) - readmission_rate(df[planned]) >= 0.15
    assert readmission_rate(df[df["age"] >= 65]) - readmission_rate(df[df["age"] < 45]) >= 0.12


def test_diagnosis_depends_on_age_sex_and_admission(table: pd.DataFrame) -> None:
    def share(rows: pd.Series, diagnosis: str) -> float:
        return float((table.loc[rows, "diagnosis"] == diagnosis).mean())

    old, young = table["age"] >= 65, table["age"].between(18, 44)
    assert share(old, "Stroke") > 3 * share(young, "Stroke")
    assert share(young, "Schizophrenia") > 3 * share(old, "Schizophrenia")
    assert share(table["sex"] == "Male", "HIV") > 1.5 * share(table["sex"] == "Female", "HIV")
    maternity = table["admission_type"] == "Maternity"
    assert (table.loc[maternity, "diagnosis"] == "Childbirth").all()
    assert (table.loc[maternity, "sex"] == "Female").all()


def test_stay_and_life_stage_follow_age(table: pd.DataFrame) -> None:
    stay = table.groupby("admission_type")["length_of_stay"].mean()
    assert stay["Day-surgery"] < 1 < stay["Elective"] < stay["Emergency"] < stay["Transfer"]
    children = table["age"] < 16
    assert (table.loc[children, "employment"] == "Child").all()
    assert (table.loc[children, "marital_status"] == "Never-married").all()
    assert (table.loc[table["age"] >= 80, "employment"] == "Retired").mean() > 0.9


def test_parquet_dataset_is_exact_distinct_and_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every chunk is written before the next is generated (memory is one chunk's), the row
    counts are exact, and chunk c is the table of seed `seed + c`: no chunk repeats another."""
    import pyarrow.parquet as pq

    from fedanon import synth

    events: list[tuple[str, int]] = []
    generate, write = synth.generate_hospital, pq.ParquetWriter.write_table

    def generating(n_rows: int, seed: int) -> pd.DataFrame:
        events.append(("generate", n_rows))
        return generate(n_rows, seed)

    def writing(self: pq.ParquetWriter, table: object, *args: object, **kw: object) -> None:
        events.append(("write", table.num_rows))  # type: ignore[attr-defined]
        write(self, table, *args, **kw)

    monkeypatch.setattr(synth, "generate_hospital", generating)
    monkeypatch.setattr(pq.ParquetWriter, "write_table", writing)
    paths = synth.write_hospital_parquet(tmp_path, 2503, 3, chunk=400, seed=50)
    assert [p.name for p in paths] == [
        "part-0000.parquet",
        "part-0001.parquet",
        "part-0002.parquet",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in paths]
    # 835 + 834 + 834 rows, in chunks of at most 400, each written before the next is made
    sizes = [400, 400, 35, 400, 400, 34, 400, 400, 34]
    assert events == [e for n in sizes for e in (("generate", n), ("write", n))]
    files = [pq.ParquetFile(p) for p in paths]
    assert [f.metadata.num_rows for f in files] == [835, 834, 834]
    assert [f.metadata.num_row_groups for f in files] == [3, 3, 3]
    chunks = [
        generate(n, 50 + c).drop(columns=["patient_id"]).astype(str) for c, n in enumerate(sizes)
    ]
    whole = pd.concat([f.read().to_pandas() for f in files], ignore_index=True)
    assert whole.equals(pd.concat(chunks, ignore_index=True))
    firsts = {tuple(chunk.iloc[:50].itertuples(index=False)) for chunk in chunks}
    assert len(firsts) == len(chunks)  # distinct seeds, distinct rows


def test_parquet_dataset_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fedanon import synth

    generate = synth.generate_hospital
    calls: list[int] = []

    def failing(n_rows: int, seed: int) -> pd.DataFrame:
        calls.append(n_rows)
        if len(calls) == 4:
            raise MemoryError("killed")
        return generate(n_rows, seed)

    monkeypatch.setattr(synth, "generate_hospital", failing)
    with pytest.raises(MemoryError):
        synth.write_hospital_parquet(tmp_path, 1200, 2, chunk=200)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part-0000.parquet"]
    with pytest.raises(FedanonError, match="cannot write 1 rows as 2 files"):
        synth.write_hospital_parquet(tmp_path, 1, 2)
