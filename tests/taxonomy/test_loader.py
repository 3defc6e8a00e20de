"""`load_taxonomy` picks the reader from the path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fedanon.errors import FedanonError
from fedanon.taxonomy.loader import load_taxonomy

TOML = '[attributes.sex]\nkind = "categorical"\ntree = """\nAny\n  F\n  M\n"""\n'
HCHY = "sex:discrete\n{Any {F} {M}}\n"


@pytest.mark.parametrize(
    ("name", "text"),
    [("t.toml", TOML), ("t.hchy", HCHY), ("sex.csv", "F;Any\nM;Any\n")],
)
def test_dispatch_by_suffix(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    tf = load_taxonomy(str(path))
    assert list(tf.taxonomies) == ["sex"]
    assert tf.taxonomies["sex"].labels == ["Any", "F", "M"]
    assert tf.source == str(path)


def test_list_of_arx_files(tmp_path: Path) -> None:
    (tmp_path / "sex.csv").write_text("F;*\nM;*\n")
    (tmp_path / "age.csv").write_text("1;*\n")
    tf = load_taxonomy([tmp_path / "sex.csv", tmp_path / "age.csv"])
    assert sorted(tf.taxonomies) == ["age", "sex"]


def test_upper_case_suffix(tmp_path: Path) -> None:
    path = tmp_path / "T.HCHY"
    path.write_text(HCHY)
    assert list(load_taxonomy(path).taxonomies) == ["sex"]


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["t.yaml"], "t.yaml: unknown taxonomy format"),
        (["a.toml", "b.toml"], "unknown taxonomy format"),
        (["a.csv", "b.toml"], "unknown taxonomy format"),
    ],
)
def test_unknown_format(tmp_path: Path, names: list[str], message: str) -> None:
    for name in names:
        (tmp_path / name).write_text("x")
    with pytest.raises(FedanonError, match=re.escape(message)):
        load_taxonomy([tmp_path / n for n in names])


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FedanonError, match=re.escape("nope.toml: taxonomy file not found")):
        load_taxonomy(tmp_path / "nope.toml")


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(FedanonError, match="no ARX hierarchy files"):
        load_taxonomy(tmp_path)


def test_empty_list() -> None:
    with pytest.raises(FedanonError, match="no taxonomy file given"):
        load_taxonomy([])
