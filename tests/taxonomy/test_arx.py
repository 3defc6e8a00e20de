"""The ARX hierarchy CSV reader, on small files and on the ARX Adult hierarchies."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.readers.datadir import have_data
from fedanon.taxonomy.arx import arx_attribute_files, parse_arx_rows, read_arx_hierarchy
from fedanon.taxonomy.loader import load_taxonomy

needs_arx = pytest.mark.skipif(
    not have_data("adult", "arx_hierarchies") or not have_data("adult", "arx_adult.csv"),
    reason="shared ARX Adult data not found under the data dir (set FEDANON_DATA_DIR)",
)


def rows(text: str) -> list[list[str]]:
    return [line.split(";") for line in text.splitlines()]


def test_rows_read_right_to_left() -> None:
    tax = parse_arx_rows("job", rows("Nurse;Care;*\nDoctor;Care;*\nClerk;Office;*"), "job.csv")
    assert tax.labels == ["*", "Care", "Nurse", "Doctor", "Office", "Clerk"]
    assert tax.atom_labels == ["Nurse", "Doctor", "Clerk"]
    assert [tax.labels[c] for c in tax.children[0]] == ["Care", "Office"]


def test_equal_labels_under_different_parents_stay_apart() -> None:
    text = "a;Other;North;*\nb;Other;South;*\nc;Main;South;*"
    tax = parse_arx_rows("x", rows(text), "x.csv")
    others = [n for n in range(tax.n_nodes) if tax.labels[n] == "Other"]
    assert len(others) == 2
    assert [tax.labels[tax.parent[n]] for n in others] == ["North", "South"]
    assert tax.atom_labels == ["a", "b", "c"]


def test_rows_of_different_lengths_that_agree() -> None:
    tax = parse_arx_rows("sex", rows("Male;*\nFemale;Person;*\nOther;Person;*"), "sex.csv")
    assert tax.labels == ["*", "Male", "Person", "Female", "Other"]


def test_numeric_leaves_match_by_number_as_in_arx() -> None:
    tax = parse_arx_rows("age", rows("38;35-39;*\n39;35-39;*"), "age.csv")
    assert tax.numeric_leaves
    assert tax.encode(pd.Series([39, 38])).tolist() == [1, 0]
    assert tax.encode(pd.Series(["39.0", "038", "38"])).tolist() == [1, 0, 0]
    with pytest.raises(FedanonError, match=re.escape("value '40' (first at row 2)")):
        tax.encode(pd.Series(["39", "40"]))


def test_text_leaves_still_match_exactly() -> None:
    tax = parse_arx_rows("grade", rows("1;low;*\nA;high;*"), "grade.csv")
    assert not tax.numeric_leaves
    with pytest.raises(FedanonError, match=re.escape("value '1.0' (first at row 1)")):
        tax.encode(pd.Series(["1.0"]))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a;X;*\nX;*", "x.csv:2: 'X' is a raw value on line 2 and a generalization on line 1"),
        ("X;*\na;X;*", "x.csv:2: 'X' is a raw value on line 1 and a generalization on line 2"),
        ("a;X;*\nb;Y;ANY", "x.csv:2: root 'ANY' differs from '*' (line 1)"),
        ("a;X;*\na;Y;*", "x.csv:2: value 'a' is listed again (first on line 1)"),
        ("a;;*", "x.csv:1: field 2 is empty"),
        ("a;X;*\nb", "x.csv:2: a row needs at least a value and the root"),
        ("\n\n", "x.csv: the hierarchy file is empty"),
    ],
)
def test_inconsistent_rows(text: str, message: str) -> None:
    with pytest.raises(FedanonError, match=re.escape(message)):
        parse_arx_rows("x", rows(text), "x.csv")


def test_file_with_bom_quotes_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "city.csv"
    path.write_text('\ufeffParis;"Ile; de France";*\r\n\r\nLyon;Rhone;*\r\n', encoding="utf-8")
    tax = read_arx_hierarchy("city", path)
    assert tax.labels == ["*", "Ile; de France", "Paris", "Rhone", "Lyon"]


def test_directory_matches_files_to_columns(tmp_path: Path) -> None:
    (tmp_path / "adult_hierarchy_age.csv").write_text("1;*\n2;*\n")
    (tmp_path / "sex.csv").write_text("M;*\nF;*\n")
    (tmp_path / "data.csv").write_text("age;sex\n1;M\n")
    tf = load_taxonomy(tmp_path, data_columns=["age", "sex"])
    assert sorted(tf.taxonomies) == ["age", "sex"]
    assert tf.qids == ["age", "sex"]  # ARX: an attribute with a hierarchy is a QID
    assert tf.sensitive is None and tf.class_column is None
    assert tf.taxonomies["age"].atom_labels == ["1", "2"]


def test_directory_without_columns_uses_file_names(tmp_path: Path) -> None:
    (tmp_path / "sex.csv").write_text("M;*\nF;*\n")
    assert list(load_taxonomy(tmp_path).taxonomies) == ["sex"]


def test_explicit_file_matching_no_column_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "weight.csv"
    path.write_text("1;*\n")
    with pytest.raises(
        FedanonError, match=re.escape("weight.csv: ARX hierarchy file matches no data")
    ):
        load_taxonomy([path], data_columns=["age"])


def test_two_files_for_one_column(tmp_path: Path) -> None:
    paths = [tmp_path / "age.csv", tmp_path / "h_age.csv"]
    with pytest.raises(FedanonError, match="a second ARX hierarchy for 'age'"):
        arx_attribute_files(paths, ["age"])


@needs_arx
def test_every_arx_adult_value_is_a_leaf(adult_dir: Path) -> None:
    df = pd.read_csv(adult_dir / "arx_adult.csv", sep=";", engine="pyarrow")
    assert len(df) == 30_162
    tf = load_taxonomy(adult_dir / "arx_hierarchies", data_columns=list(df.columns))
    assert sorted(tf.taxonomies) == sorted(df.columns)
    for column in df.columns:
        tax = tf.taxonomies[column]
        atoms = tax.encode(df[column])
        leaf_of_row = pd.Series(tax.atom_labels).iloc[atoms].to_numpy()
        assert (leaf_of_row == df[column].astype(str).to_numpy()).all()
    age = tf.taxonomies["age"]
    assert age.kind == "categorical" and age.labels[0] == "*" and "39" in age.atom_labels
