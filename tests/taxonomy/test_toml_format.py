"""fedanon's TOML taxonomy format: reading, writing, round trips and error messages."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedanon.errors import FedanonError
from fedanon.readers.datadir import have_data
from fedanon.taxonomy.files import SensitiveValue, TaxonomyFile
from fedanon.taxonomy.hchy import read_hchy
from fedanon.taxonomy.loader import load_taxonomy
from fedanon.taxonomy.toml_format import dump_toml_taxonomy, parse_toml_taxonomy
from fedanon.taxonomy.tree import Spec, Taxonomy

EXAMPLE = '''\
qids = ["age", "sex", "stay"]

[sensitive]
diagnosis = ["HIV", "Schizophrenia"]

[class]
column = "readmitted"
values = ["no", "yes"]

[attributes.sex]
kind = "categorical"
tree = """
Any
  Female

  Male
"""

[attributes.age]
kind = "numeric"
tree = """
[0, 120)
  [0, 18)
  [18, 120)
    [18, 65)
    [65, 120)
"""

[attributes.stay]
kind = "numeric"
dynamic = true
'''


def test_example_file() -> None:
    tf = parse_toml_taxonomy(EXAMPLE, "ex.toml")
    assert tf.qids == ["age", "sex", "stay"]
    assert tf.sensitive == [
        SensitiveValue("diagnosis", "HIV"),
        SensitiveValue("diagnosis", "Schizophrenia"),
    ]
    assert (tf.class_column, tf.class_values) == ("readmitted", ["no", "yes"])
    assert list(tf.taxonomies) == ["sex", "age"]
    assert tf.dynamic_attributes == ["stay"]
    assert tf.taxonomies["sex"].labels == ["Any", "Female", "Male"]
    age = tf.taxonomies["age"]
    assert age.labels == ["[0-120)", "[0-18)", "[18-120)", "[18-65)", "[65-120)"]
    assert age.parent == [-1, 0, 0, 2, 2]


def test_optional_sections_stay_none() -> None:
    tf = parse_toml_taxonomy('[attributes.a]\nkind = "categorical"\ntree = "x"\n', "a.toml")
    assert (tf.qids, tf.sensitive, tf.class_column, tf.class_values) == (None, None, None, None)
    tf = parse_toml_taxonomy(
        '[class]\ncolumn = "c"\n[attributes.a]\nkind = "categorical"\ntree = "x"\n', "a.toml"
    )
    assert (tf.class_column, tf.class_values) == ("c", None)


def summary(tf: TaxonomyFile) -> tuple[object, ...]:
    trees = {
        name: (tax.kind, tax.labels, tax.parent, tax.atom_labels, tax.fingerprint_items())
        for name, tax in tf.taxonomies.items()
    }
    return (trees, tf.dynamic_attributes, tf.qids, tf.sensitive, tf.class_column, tf.class_values)


def assert_round_trip(tf: TaxonomyFile) -> None:
    text = dump_toml_taxonomy(tf)
    back = parse_toml_taxonomy(text, "rt.toml")
    assert summary(back) == summary(tf)
    assert dump_toml_taxonomy(back) == text


def test_example_round_trip() -> None:
    assert_round_trip(parse_toml_taxonomy(EXAMPLE, "ex.toml"))


@pytest.mark.skipif(
    not have_data("adult", "lkc_paper_taxonomy.hchy"),
    reason="shared Adult data not found under the data dir (set FEDANON_DATA_DIR)",
)
def test_adult_hchy_converts_to_toml(adult_dir: Path, tmp_path: Path) -> None:
    tf = read_hchy(adult_dir / "lkc_paper_taxonomy.hchy")
    assert_round_trip(tf)
    path = tmp_path / "adult.toml"
    path.write_text(dump_toml_taxonomy(tf))
    assert summary(load_taxonomy(path)) == summary(tf)


def test_dynamic_taxonomy_object_is_written_as_dynamic() -> None:
    tax = Taxonomy.dynamic("stay", pd.Series([1, 5, 9]))
    tf = TaxonomyFile(taxonomies={"stay": tax})
    back = parse_toml_taxonomy(dump_toml_taxonomy(tf), "rt.toml")
    assert (back.taxonomies, back.dynamic_attributes) == ({}, ["stay"])


# --------------------------------------------------------------------------- random round trips
_odd = st.sampled_from(['"', "\\", "\t", "'", "#", "[", ")", "{", "=", "\u00e9", "\u00a0", "\x7f"])
_char = st.one_of(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), _odd)
labels = st.text(_char, min_size=1, max_size=8).map(str.strip).filter(bool)


@st.composite
def categorical_specs(draw: st.DrawFn) -> Spec:
    """A random tree of at most 1 + 3 + 9 + 27 nodes, all labels distinct."""
    pool = draw(st.lists(labels, min_size=40, max_size=40, unique=True))

    def grow(depth: int) -> Spec:
        n = draw(st.integers(0, 3)) if depth < 3 else 0
        spec = Spec(pool.pop())
        spec.children = [grow(depth + 1) for _ in range(n)]
        return spec

    return grow(0)


@st.composite
def numeric_specs(draw: st.DrawFn) -> Spec:
    """Nested half-open intervals, contiguous or with gaps, integer or fractional bounds."""
    finite = st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False)
    lo, hi = sorted(draw(st.lists(finite, min_size=2, max_size=2, unique=True)))

    def grow(lo: float, hi: float, depth: int) -> Spec:
        spec = Spec("", lo=lo, hi=hi)
        n = draw(st.integers(0, 3)) if depth < 3 else 0
        if n and math.nextafter(lo, hi) < hi:  # some float lies strictly inside
            inner = st.floats(lo, hi, allow_nan=False, exclude_min=True, exclude_max=True)
            cuts = sorted(draw(st.lists(inner, max_size=n, unique=True)))
            bounds = [lo, *cuts, hi]
            pairs = list(itertools.pairwise(bounds))
            keep = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
            spec.children = [
                grow(a, b, depth + 1) for (a, b), k in zip(pairs, keep, strict=True) if k
            ]
        return spec

    return grow(lo, hi, 0)


@st.composite
def taxonomy_files(draw: st.DrawFn) -> TaxonomyFile:
    names = draw(st.lists(labels, min_size=1, max_size=4, unique=True))
    taxonomies: dict[str, Taxonomy] = {}
    dynamic: list[str] = []
    for name in names:
        kind = draw(st.sampled_from(["categorical", "numeric", "dynamic"]))
        if kind == "categorical":
            taxonomies[name] = Taxonomy.categorical(name, draw(categorical_specs()))
        elif kind == "numeric":
            taxonomies[name] = Taxonomy.numeric(name, draw(numeric_specs()))
        else:
            dynamic.append(name)
    qids = draw(st.none() | st.lists(st.sampled_from(names), unique=True))
    sensitive_values = draw(st.lists(labels, max_size=3, unique=True))
    sensitive = draw(
        st.none() | st.just([SensitiveValue("diag nosis", v) for v in sensitive_values])
    )
    class_values = draw(st.none() | st.lists(labels, min_size=1, max_size=3, unique=True))
    class_column = draw(st.none() | labels) if class_values is None else draw(labels)
    return TaxonomyFile(
        taxonomies=taxonomies,
        dynamic_attributes=dynamic,
        qids=qids,
        sensitive=sensitive,
        class_column=class_column,
        class_values=class_values,
    )


@settings(max_examples=150, deadline=None)
@given(taxonomy_files())
def test_random_files_round_trip(tf: TaxonomyFile) -> None:
    assert_round_trip(tf)


def test_label_that_cannot_be_written() -> None:
    tf = TaxonomyFile(taxonomies={"a": Taxonomy.categorical("a", Spec("Any", [Spec(" x")]))})
    with pytest.raises(FedanonError, match=re.escape("label ' x' cannot be written")):
        dump_toml_taxonomy(tf)


# --------------------------------------------------------------------------- errors
def attr(kind: str, tree: str) -> str:
    return f'[attributes.a]\nkind = "{kind}"\ntree = """\n{tree}"""\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("qids = [", "bad.toml: not valid TOML:"),
        ('qids = ["a"]\n', "bad.toml: needs an [attributes.<name>] table"),
        ('qid = ["a"]\n' + attr("categorical", "x\n"), "bad.toml: unknown key 'qid'"),
        (
            '[attributes.a]\nkind = "categorical"\ntrees = "x"\n',
            "attribute 'a': unknown key 'trees'",
        ),
        ('[attributes.a]\nkind = "nominal"\ntree = "x"\n', "attribute 'a': kind must be"),
        ('[attributes.a]\nkind = "categorical"\n', "attribute 'a': needs a tree"),
        ('[attributes.a]\nkind = "categorical"\ndynamic = true\n', "only numeric attributes can"),
        ('[attributes.a]\nkind = "numeric"\ndynamic = true\ntree = "[0, 1)"\n', "has no tree"),
        (attr("categorical", "Any\n\tx\n"), "attribute 'a', line 2: indent with spaces only"),
        (
            attr("categorical", "Any\n   x\n"),
            "attribute 'a', line 2: indentation must be a multiple",
        ),
        (attr("categorical", "Any\n    x\n"), "attribute 'a', line 2: 'x' is indented more than"),
        (attr("categorical", "Any\n  x\nOther\n"), "attribute 'a', line 3: a second root 'Other'"),
        (attr("categorical", "  Any\n"), "attribute 'a', line 1: the root must not be indented"),
        (attr("categorical", "\n"), "attribute 'a': the tree is empty"),
        (attr("categorical", "Any\n  x\n  y\n    x\n"), "leaf value 'x' appears twice"),
        (attr("numeric", "[0, 10)\n  0-5\n"), "attribute 'a', line 2: '0-5' is not a half-open"),
        (attr("numeric", "[0, 10]\n"), "'[0, 10]' is not a half-open interval"),
        (
            attr("numeric", "[0, 10)\n  [0, 6)\n  [5, 10)\n"),
            "bad.toml: attribute 'a': taxonomy of 'a': interval '[5, 10)' overlaps a sibling",
        ),
        (
            attr("numeric", "[0, 10)\n  [5, 12)\n"),
            "interval '[5, 12)' overlaps a sibling or leaves",
        ),
        ('qids = ["b"]\n' + attr("categorical", "x\n"), "bad.toml: QID 'b' has no taxonomy"),
        ('qids = ["a", "a"]\n' + attr("categorical", "x\n"), "QID 'a' is listed twice"),
        (
            "qids = [1]\n" + attr("categorical", "x\n"),
            "bad.toml: qids: must be a list of non-empty",
        ),
        ('[sensitive]\na = ["y"]\n' + attr("categorical", "x\n"), "'a=y' is not a leaf"),
        ('[sensitive]\nd = "HIV"\n' + attr("categorical", "x\n"), "sensitive.d: must be a list"),
        ('[class]\nvalues = ["y"]\n' + attr("categorical", "x\n"), "[class] needs column"),
        (
            '[class]\ncolumn = "c"\nvalues = ["y", "y"]\n' + attr("categorical", "x\n"),
            "not distinct",
        ),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(FedanonError, match=re.escape(message)):
        parse_toml_taxonomy(text, "bad.toml")
