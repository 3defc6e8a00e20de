"""A one-process party holds its table as Arrow text (fedanon/readers/sources.py, #28 session 11).

The daemon reads its table with Arrow alone; an LKC job counts and releases that table as it is,
and any other job kind gets the DataFrame the daemon used to hold (`read_table`'s), made once.
What the party sends is unchanged: its count vector and its release's record bytes are those
of the DataFrame, also when Arrow's reader cut the columns into several chunks.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.engines import EngineSettings
from fedanon.algorithms.tds.engines.base import LocalEngine
from fedanon.errors import FedanonError
from fedanon.party.handlers import HANDLERS
from fedanon.party.records import LocalRecords, encode_record
from fedanon.readers.sources import ArrowSource, FrameSource, as_source, read_source
from fedanon.readers.table_io import read_table
from tests.distributed.conftest import hospital_dataset


def test_the_frame_of_an_arrow_source_is_read_tables_made_once(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    hospital_dataset(300, seed=2).table.to_csv(path, index=False)
    source = read_source(path)
    assert isinstance(source, ArrowSource) and isinstance(source.whole(), pa.Table)
    expected = read_table(path)
    assert source.columns == list(expected.columns) and source.n_rows == len(expected)
    pd.testing.assert_frame_equal(source.frame(), expected)
    assert source.frame() is source.frame()
    assert as_source(source) is source
    assert isinstance(as_source(expected), FrameSource)


def test_a_bad_table_is_one_line_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    with pytest.raises(FedanonError, match=r"missing\.csv: file not found"):
        read_source(missing)
    twice = tmp_path / "twice.csv"
    twice.write_text("a,a\n1,2\n", encoding="utf-8")
    with pytest.raises(FedanonError, match=r"twice\.csv: a column name appears twice"):
        read_source(twice)


def test_an_lkc_party_counts_and_releases_the_arrow_table_as_the_dataframe() -> None:
    data = hospital_dataset(900, seed=3)
    spec = data.spec(L=3, K=20, C="0.2")
    frame = data.table.astype(str).astype(pd.ArrowDtype(pa.string()))
    whole = pa.Table.from_pandas(frame, preserve_index=False)
    # three chunks per column, as Arrow's CSV reader gives a large file
    chunked = pa.concat_tables([whole.slice(0, 200), whole.slice(200, 500), whole.slice(700)])
    assert chunked.column(0).num_chunks == 3
    schema = build_schema(data.taxonomy, data.table, spec.qids, spec.sensitive, spec.class_column)
    columns = [c for c in frame.columns if c not in spec.drop]
    engine = LocalEngine(EngineSettings())
    ours = engine.open(schema, ArrowSource(chunked), columns)
    theirs = engine.open(schema, FrameSource(frame), columns)
    assert (ours.start() == theirs.start()).all()
    released = LocalRecords(lambda: ours.released_rows(encode_record)).expand()
    text = theirs.generalized_table().astype(str)
    expected = [encode_record(row) for row in text.itertuples(index=False, name=None)]
    assert released == expected


# A cell each: (column, row, value) and the start of the one-line error it gives.
BAD_CELLS = [
    ("readmitted", 5, "bogus", "class column 'readmitted': value 'bogus' (first at row 6)"),
    ("age", 7, "abc", "column 'age': value 'abc' (first at row 8) is not a number"),
    ("age", 7, "", "column 'age': value '' (first at row 8) is not a number"),
    ("age", 7, "999", "column 'age': value '999' (first at row 8) lies outside every leaf"),
    ("sex", 3, "X", "column 'sex': value 'X' (first at row 4) is not a leaf of its taxonomy"),
]


@pytest.mark.parametrize(("column", "row", "value", "message"), BAD_CELLS)
def test_a_bad_cell_is_refused_with_the_dataframes_message(
    tmp_path: Path, column: str, row: int, value: str, message: str
) -> None:
    """A cell the job cannot count is refused at the session's opening with the same one line
    from the Arrow table as from the DataFrame."""
    data = hospital_dataset(60, seed=3)
    spec = data.spec(L=3, K=20, C="0.2")
    schema = build_schema(data.taxonomy, data.table, spec.qids, spec.sensitive, spec.class_column)
    table = data.table.astype(str)
    table.loc[row, column] = value
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    columns = [c for c in table.columns if c not in spec.drop]
    for source in (read_source(path), FrameSource(read_table(path))):
        with pytest.raises(FedanonError) as refused:
            LocalEngine(EngineSettings()).open(schema, source, columns).start()
        assert str(refused.value).startswith(message)


def test_every_kind_is_served_by_its_own_modules_handler() -> None:
    assert list(HANDLERS) == ["lkc", "drbt", "randomize", "c45", "kactus", "evaluate"]
    for kind in HANDLERS:
        assert HANDLERS[kind].kind == kind
    assert HANDLERS.get("count") is None
