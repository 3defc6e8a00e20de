"""A daemon's table read as Arrow (ArrowSource) against the DataFrame path the daemon took on
main 0ed0155 (FrameSource of read_table), on tables with odd cells (#28 session 11 review):
the same count vector and release bytes, or the same one-line error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.engines import EngineSettings
from fedanon.algorithms.tds.engines.base import LocalEngine
from fedanon.errors import FedanonError
from fedanon.party.records import LocalRecords, encode_record
from fedanon.readers.sources import FrameSource, TableSource, read_source
from fedanon.readers.table_io import read_table
from tests.distributed.conftest import hospital_dataset

DATA = hospital_dataset(60, seed=3)
SPEC = DATA.spec(L=3, K=20, C="0.2")
SCHEMA = build_schema(DATA.taxonomy, DATA.table, SPEC.qids, SPEC.sensitive, SPEC.class_column)
BASE = DATA.table.astype(str)


def _cell(column: str, row: int, value: str) -> bytes:
    table = BASE.copy()
    table.loc[row, column] = value
    return table.to_csv(index=False).encode()


AGE = str(BASE.loc[3, "age"])
CSV = BASE.to_csv(index=False).encode()
HEADER, FIRST = CSV.split(b"\n")[:2]


def _wide(extra: int) -> bytes:
    """`extra` more columns on every row."""
    lines = CSV.rstrip(b"\n").split(b"\n")
    header = lines[0] + b"".join(b",c%d" % i for i in range(extra))
    return b"\n".join([header, *(line + b",1" * extra for line in lines[1:])]) + b"\n"


# name -> the file's bytes
ODD: dict[str, Callable[[], bytes]] = {
    "byte order mark": lambda: b"\xef\xbb\xbf" + CSV,
    "CRLF": lambda: CSV.replace(b"\n", b"\r\n"),
    "empty released cell": lambda: _cell("diagnosis", 3, ""),
    "quoted newline": lambda: _cell("diagnosis", 3, "a\nb"),
    "quotes and commas": lambda: _cell("diagnosis", 3, 'say "hi", then'),
    "NA text": lambda: _cell("diagnosis", 3, "NA"),
    "nan text": lambda: _cell("diagnosis", 5, "nan"),
    "spaces": lambda: _cell("diagnosis", 3, " x "),
    "non-ASCII": lambda: _cell("diagnosis", 3, "Grippe \u00e9\u4e2d"),
    "float age": lambda: _cell("age", 3, AGE + ".0"),
    "signed age": lambda: _cell("age", 3, "+" + AGE),
    "NA in a QID": lambda: _cell("age", 3, "NA"),
    "empty class": lambda: _cell("readmitted", 3, ""),
    "space in a QID": lambda: _cell("sex", 3, " Male"),
    "non-UTF-8 cell": lambda: CSV.replace(FIRST, FIRST + b"\xff", 1),
    "ragged row": lambda: CSV.replace(FIRST, FIRST + b",extra", 1),
    "wide rows": lambda: _wide(2000),
    "header only": lambda: HEADER + b"\n",
}


def _outcome(source: Callable[[], TableSource]) -> tuple[str, object]:
    try:
        src = source()
        columns = [c for c in src.columns if c not in SPEC.drop]
        party = LocalEngine(EngineSettings()).open(SCHEMA, src, columns)
        vector = party.start().tobytes()
        released = LocalRecords(lambda: party.released_rows(encode_record)).expand()
        return "served", (vector, released)
    except FedanonError as exc:
        return "refused", str(exc)


@pytest.mark.parametrize("name", ODD)
def test_an_odd_table_counts_releases_or_fails_as_the_dataframe(tmp_path: Path, name: str) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(ODD[name]())
    arrow = _outcome(lambda: read_source(path))
    frame = _outcome(lambda: FrameSource(read_table(path)))
    assert arrow == frame
    if arrow[0] == "refused":
        assert "\n" not in str(arrow[1])
