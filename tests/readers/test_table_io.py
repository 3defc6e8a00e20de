"""Table reading and writing: exact text, atomic writes, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.readers.table_io import read_table, require_columns, write_table


def test_round_trip_keeps_text_exactly(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,score,note\n007,0.50,NA\n010,1e3,\n", encoding="utf-8")
    table = read_table(path)
    assert table["id"].tolist() == ["007", "010"]
    assert table["score"].tolist() == ["0.50", "1e3"]
    assert table["note"].tolist() == ["NA", ""]
    out = tmp_path / "o.csv"
    write_table(table, out)
    assert out.read_text(encoding="utf-8") == "id,score,note\n007,0.50,NA\n010,1e3,\n"


def test_values_that_need_quotes_survive(tmp_path: Path) -> None:
    table = pd.DataFrame({"a": ["plain"] * 3 + ["x,y", 'q"r'], "b": list("12345")})
    out = tmp_path / "o.csv"
    write_table(table, out)
    assert read_table(out).values.tolist() == table.values.tolist()


def test_missing_file_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(FedanonError, match="file not found"):
        read_table(tmp_path / "nope.csv")
    (tmp_path / "empty.csv").write_text("", encoding="utf-8")
    with pytest.raises(FedanonError, match="empty file"):
        read_table(tmp_path / "empty.csv")


def test_wrong_delimiter_hint(tmp_path: Path) -> None:
    path = tmp_path / "semi.csv"
    path.write_text("a;b\n1;2\n", encoding="utf-8")
    table = read_table(path, ",")  # told the wrong delimiter
    with pytest.raises(FedanonError, match="wrong delimiter"):
        require_columns(table, ["b"], path)
    assert read_table(path)["b"].tolist() == ["2"]  # detected from the header


def test_ragged_rows_are_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("a,b\n1,2\n3\n", encoding="utf-8")
    with pytest.raises(FedanonError, match="cannot read table"):
        read_table(path)


def test_failed_write_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "o.csv"
    bad = pd.DataFrame({"a": [object()]})
    with pytest.raises(Exception):  # noqa: B017 - any failure: the point is no file remains
        write_table(bad, out)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []
