"""The reader of the LKC authors' ``.hchy`` format, on small files and on their Adult file."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.readers.datadir import have_data
from fedanon.taxonomy.files import SensitiveValue
from fedanon.taxonomy.hchy import parse_hchy, read_hchy
from fedanon.taxonomy.validate import validate_table

needs_adult = pytest.mark.skipif(
    not have_data("adult", "lkc_paper_taxonomy.hchy") or not have_data("adult", "adult_all.csv"),
    reason="shared Adult data not found under the data dir (set FEDANON_DATA_DIR)",
)

SMALL = """\
| header comment {with braces} that must be ignored
classes:discrete   | the class
{Any Class {yes} {no}}

temp:continuous
{-10-40 {-10--5} {-5-10 {-5-0} {0-10}} {10-40}}
color:discrete:generalization
{Any
  {Warm {Red} {Orange}}
  {Cold {Blue}}
}

| VID:
| {{{100} {temp} {color} {nonexistent}}}

VID:
{{{100} {temp} {color}}}

sensitive: | sensitive concepts
{{0.5 color:Red} {0.25 color:Blue}}
"""


def parse(text: str) -> object:
    return parse_hchy(text, "small.hchy")


def test_small_file_sections() -> None:
    tf = parse_hchy(SMALL, "small.hchy")
    assert list(tf.taxonomies) == ["class", "temp", "color"]
    assert tf.qids == ["temp", "color"]  # the commented-out VID is ignored
    assert tf.sensitive == [SensitiveValue("color", "Red"), SensitiveValue("color", "Blue")]
    assert tf.class_column == "class"
    assert tf.class_values == ["yes", "no"]
    assert tf.taxonomies["class"].labels[0] == "Any Class"
    color = tf.taxonomies["color"]
    assert color.kind == "categorical"
    assert color.labels == ["Any", "Warm", "Red", "Orange", "Cold", "Blue"]
    assert color.atom_labels == ["Red", "Orange", "Blue"]


def test_negative_interval_bounds() -> None:
    temp = parse_hchy(SMALL, "small.hchy").taxonomies["temp"]
    assert temp.kind == "numeric"
    assert temp.labels == ["[-10-40)", "[-10--5)", "[-5-10)", "[-5-0)", "[0-10)", "[10-40)"]
    assert temp.node_lo[:3] == [-10.0, -10.0, -5.0]
    assert temp.node_hi[:3] == [40.0, -5.0, 10.0]
    atoms = temp.encode(pd.Series([-10, -5.5, -5, 0, 39.9]))
    assert atoms.tolist() == [0, 0, 1, 2, 3]


def test_exponent_bounds() -> None:
    tax = parse_hchy("a:continuous\n{1e-3-2 {1e-3-1} {1-2}}\n", "e.hchy").taxonomies["a"]
    assert (tax.node_lo, tax.node_hi) == ([0.001, 0.001, 1.0], [2.0, 1.0, 2.0])


def test_read_from_file(tmp_path: Path) -> None:
    path = tmp_path / "small.hchy"
    path.write_text(SMALL)
    assert read_hchy(path).source == str(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a:discrete\n{Any {x} {y}\n", "small.hchy:2: '{' opened here is never closed"),
        ("a:discrete\n{Any {x}}}\n", "small.hchy:2: expected a section header like"),
        ("a:discrete\n{Any {x} junk {y}}\n", "small.hchy:2: unexpected text 'junk'"),
        ("a:discrete\n\n", "small.hchy:1: section 'a' has no brace tree"),
        ("{Any {x}}\n", "small.hchy:1: expected a section header"),
        ("a:nominal\n{Any {x}}\n", "small.hchy:2: 'a': type must be 'continuous' or 'discrete'"),
        ("a:discrete:suppression\n{Any {x}}\n", "only ':generalization' is supported"),
        ("a:continuous\n{0-10 {0-6} {5-10}}\n", "small.hchy:2: taxonomy of 'a': interval"),
        ("a:continuous\n{0-10 {zero-5}}\n", "small.hchy:2: 'a': 'zero-5' is not an interval"),
        ("a:continuous\n{10-0}\n", "bad interval"),
        ("a:discrete\n{Any {x} {x}}\n", "duplicate children"),
        ("a:discrete\n{Any {x}}\na:discrete\n{Any {y}}\n", "small.hchy:3: section 'a' appears"),
        ("class:discrete\n{A {x}}\nclasses:discrete\n{A {y}}\n", "3: attribute 'class' is defined"),
        ("a:discrete\n{Any {x}}\nVID:\n{{{1} {a}} {{1} {a}}}\n", "exactly one virtual identifier"),
        ("a:discrete\n{Any {x}}\nVID:\n{{{a}}}\n", "VID must start with a numeric weight"),
        ("a:discrete\n{Any {x}}\nVID:\n{{{1} {b}}}\n", "QID 'b' has no taxonomy"),
        ("a:discrete\n{Any {x}}\nsensitive:\n{{0.5 a-x}}\n", "small.hchy:4: sensitive entry 'a-x'"),
        ("a:discrete\n{Any {x}}\nsensitive:\n{{a:x}}\n", "sensitive entry must be"),
        ("a:discrete\n{Any {x}}\nsensitive:\n{{1 a:y}}\n", "'a=y' is not a leaf"),
        ("classes:continuous\n{0-1}\n", "'classes' must be discrete"),
    ],
)
def test_errors_name_file_and_line(text: str, message: str) -> None:
    with pytest.raises(FedanonError, match=re.escape(message)):
        parse(text)


def test_overlap_error_names_the_interval() -> None:
    with pytest.raises(FedanonError) as info:
        parse("a:continuous\n{0-10 {0-6} {5-10}}\n")
    assert str(info.value) == (
        "small.hchy:2: taxonomy of 'a': interval '5-10' overlaps a sibling or leaves its "
        "parent '0-10'"
    )


# --------------------------------------------------------------------------- the authors' file
ADULT_QIDS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "occupation", "relationship",
    "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
]  # fmt: skip


@needs_adult
def test_adult_taxonomy_file(adult_dir: Path) -> None:
    tf = read_hchy(adult_dir / "lkc_paper_taxonomy.hchy")
    assert len(tf.taxonomies) == 15
    assert set(tf.taxonomies) == {*ADULT_QIDS, "martial-status", "class"}
    assert tf.qids == ADULT_QIDS
    assert tf.sensitive == [
        SensitiveValue("martial-status", "Divorced"),
        SensitiveValue("martial-status", "Separated"),
    ]
    assert tf.class_column == "class"
    assert tf.class_values == [">50K", "<=50K"]
    assert tf.dynamic_attributes == []
    age = tf.taxonomies["age"]
    assert (age.kind, age.labels[0], age.n_atoms) == ("numeric", "[15-95)", 16)
    education = tf.taxonomies["education"]
    assert [education.labels[c] for c in education.children[0]] == [
        "Without-Post-Secondary",
        "Post-secondary",
    ]
    assert tf.taxonomies["native-country"].n_atoms == 41


@needs_adult
def test_every_adult_value_encodes(adult_dir: Path) -> None:
    tf = read_hchy(adult_dir / "lkc_paper_taxonomy.hchy")
    df = pd.read_csv(adult_dir / "adult_all.csv", engine="pyarrow")
    assert len(df) == 45_222
    validate_table(df, tf)  # all 13 QIDs, the sensitive column and the class values
    for column in [*ADULT_QIDS, "martial-status", "class"]:
        atoms = tf.taxonomies[column].encode(df[column])
        assert atoms.min() >= 0 and atoms.max() < tf.taxonomies[column].n_atoms
