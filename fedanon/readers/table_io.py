"""Reading and writing tables (CSV or Parquet) with the CLI's guarantees.

Every table is read with one open of its file (:class:`fedanon.readers.inputs.ReadOnce`): a text
table's delimiter and header are sniffed from the first bytes of the stream its parser then
reads, so a file replaced or appended meanwhile gives one version, never the header of one and
the rows of another. Values are read as Arrow-backed text so that every non-QID column is
released byte-for-byte as it came in, and numerical QIDs are parsed only where a taxonomy needs
numbers (Arrow's cast, much faster than parsing Python strings). Writes go through Arrow's CSV
writer and are atomic.
"""

from __future__ import annotations

import contextlib
import csv
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

import pyarrow as pa
import pyarrow.csv as pa_csv

from fedanon.atomic import atomic_path
from fedanon.errors import FedanonError, MissingColumnError
from fedanon.readers.inputs import ReadOnce
from fedanon.tables import Table, column_names

if TYPE_CHECKING:
    import pandas as pd

PARQUET_SUFFIXES = {".parquet", ".pq"}
TAB_SUFFIXES = {".tsv", ".tab"}
CSV_SUFFIXES = {".csv", ".txt"}
#: Delimiters recognised in a header line, in order of preference on a tie.
DELIMITER_CANDIDATES = (",", ";", "\t", "|")


def _named_delimiter(delimiter: str) -> str:
    """A delimiter the user typed: one character, or ``\\t`` / ``tab`` for a tab."""
    if delimiter in ("\\t", "tab"):
        return "\t"
    if len(delimiter) != 1:
        raise FedanonError(f"--delimiter must be one character (got '{delimiter}')")
    return delimiter


def _most_frequent_delimiter(line: str) -> str | None:
    """The candidate delimiter that splits `line` into the most fields (None if none occurs)."""
    counts = [(line.count(c), -i, c) for i, c in enumerate(DELIMITER_CANDIDATES)]
    count, _, best = max(counts)
    return best if count else None


def input_delimiter(path: Path, delimiter: str | None, stream: ReadOnce) -> str:
    """The delimiter a text table is read with: the user's, or the one its header uses.

    Files exported by other tools are often ``;``-separated (ARX, spreadsheets in many locales),
    so with no ``--delimiter`` the header line decides: the candidate (``,`` ``;`` tab ``|``)
    that occurs most often in it; ``,`` when none occurs. ``.tsv``/``.tab`` files are tab.
    `stream`: the file `path`, opened once for its parse (the head it sniffs is then parsed).
    """
    if delimiter:
        return _named_delimiter(delimiter)
    if path.suffix.lower() in TAB_SUFFIXES:
        return "\t"
    if path.suffix.lower() in PARQUET_SUFFIXES:
        return ","  # no delimiter of its own; a CSV written from it uses the default
    try:
        first = stream.from_head(lambda handle: handle.readline())
    except (OSError, UnicodeDecodeError):
        return ","  # read_table reports the real problem
    return _most_frequent_delimiter(first) or ","


def check_output_format(path: str | os.PathLike[str]) -> None:
    """Refuse an output name whose extension names no format we write (never a silent CSV)."""
    suffix = Path(path).suffix.lower()
    if suffix not in PARQUET_SUFFIXES | TAB_SUFFIXES | CSV_SUFFIXES:
        supported = ", ".join(sorted(PARQUET_SUFFIXES | TAB_SUFFIXES | CSV_SUFFIXES))
        named = f"extension '{suffix}'" if suffix else "no extension"
        raise FedanonError(f"{path}: unknown output format ({named}); supported: {supported}")


def _header(path: Path, delimiter: str, stream: ReadOnce) -> list[str]:
    def first_row(handle: IO[str]) -> list[str] | None:
        return next(csv.reader(handle, delimiter=delimiter), None)

    row = stream.from_head(first_row)
    if not row:
        raise FedanonError(f"{path}: empty file (no header line)")
    return [c.strip() for c in row]


def read_table(path: str | os.PathLike[str], delimiter: str | None = None) -> pd.DataFrame:
    """Read a CSV/TSV (with header) or Parquet file; every column as Arrow-backed text.

    Without `delimiter`, a text file's delimiter is the one its header uses
    (:func:`input_delimiter`).
    """
    return frame_of(read_arrow(path, delimiter))


def frame_of(table: pa.Table) -> pd.DataFrame:
    """:func:`read_arrow`'s table as :func:`read_table` gives it: Arrow-backed text columns."""
    import pandas as pd

    return table.to_pandas(types_mapper=pd.ArrowDtype)


def read_arrow(
    path: str | os.PathLike[str], delimiter: str | None = None, columns: list[str] | None = None
) -> pa.Table:
    """:func:`read_table`'s table before pandas: an Arrow table of text columns (what
    `fedanon anonymize lkc` works on from reading to writing), the file opened once
    (:func:`opened_once`). `columns`: only these, in that order (a Parquet file reads no
    other column: a Dask shard reads one at a time)."""
    path = _table_file(path)
    with opened_once(path) as stream:
        return _parse(path, stream, delimiter, columns)[0]


def read_arrow_delimited(
    path: str | os.PathLike[str], delimiter: str | None = None
) -> tuple[pa.Table, str]:
    """:func:`read_arrow`'s table and the delimiter it was read with (:func:`input_delimiter`,
    a text table's found in its header by the same read): a command writes its output with
    the input's delimiter, and a second read to find it could meet another file."""
    path = _table_file(path)
    with opened_once(path) as stream:
        table, sep = _parse(path, stream, delimiter, None)
        return table, sep or input_delimiter(path, delimiter, stream)  # Parquet: reads nothing


@contextlib.contextmanager
def opened_once(path: Path) -> Iterator[ReadOnce]:
    """`path` opened once for its parse (:class:`ReadOnce`: a text table streams into its
    parser, hashed on the way while a party daemon records its inputs' digest; a Parquet
    file is read at random places, or whole first when hashed); an error opening it in one
    line."""
    try:
        with ReadOnce(path) as stream:
            yield stream
    except OSError as exc:
        raise FedanonError(f"{path}: cannot read table ({str(exc).splitlines()[0]})") from exc


def _table_file(path: str | os.PathLike[str]) -> Path:
    """`path`, refused in one line unless it names a file."""
    path = Path(path)
    if not path.exists():
        raise FedanonError(f"{path}: file not found")
    if path.is_dir():
        raise FedanonError(f"{path}: is a directory, expected a table file")
    if not path.is_file():  # a FIFO, a device, a link to /dev/stdin: never ends or blocks
        raise FedanonError(
            f"{path}: not a regular file (a FIFO, a device or a terminal is not read)"
        )
    return path


def _parse(
    path: Path, stream: ReadOnce, delimiter: str | None, columns: list[str] | None
) -> tuple[pa.Table, str | None]:
    """The table file `path` as Arrow text, read from `stream` (`path` only names it and its
    format), and a text table's delimiter (None for Parquet: it has none, and a bad
    ``--delimiter`` is refused only where a delimiter is needed)."""
    sep = None
    try:
        if path.suffix.lower() in PARQUET_SUFFIXES:
            import pyarrow.parquet as pq  # only for Parquet: CSV runs skip its import

            # not read_table's dataset layer (it loads pandas)
            parquet = pq.ParquetFile(stream.random_access())
            table = parquet.read(columns=columns)
            table = table.cast(pa.schema([(n, pa.string()) for n in table.column_names]))
        else:
            sep = input_delimiter(path, delimiter, stream)
            names = _header(path, sep, stream)
            if len(set(names)) != len(names):
                raise FedanonError(f"{path}: a column name appears twice in the header")
            table = pa_csv.read_csv(
                pa.PythonFile(stream, mode="r"),
                read_options=pa_csv.ReadOptions(column_names=names, skip_rows=1),
                parse_options=pa_csv.ParseOptions(delimiter=sep),
                convert_options=pa_csv.ConvertOptions(
                    column_types={n: pa.string() for n in names}, strings_can_be_null=False
                ),
            )
    except (pa.ArrowInvalid, OSError, UnicodeDecodeError, csv.Error) as exc:
        raise FedanonError(f"{path}: cannot read table ({str(exc).splitlines()[0]})") from exc
    if columns is not None:
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise MissingColumnError(f"{path}: no column '{missing[0]}'")
        table = table.select(columns)
    return table, sep


def delimiter_hint(table: Table) -> str:
    """A hint for 'missing column' errors when the whole header landed in one column."""
    return header_hint(column_names(table))


def header_hint(columns: list[str]) -> str:
    """:func:`delimiter_hint` for a header known only by its column names."""
    if len(columns) != 1:
        return ""
    header = str(columns[0])
    found = _most_frequent_delimiter(header)
    guess = (
        f"it looks '{found}'-separated: try --delimiter '{found}'"
        if found
        else ("does it use another delimiter? try --delimiter")
    )
    return f" (wrong delimiter? the file was read as a single column '{header[:40]}': {guess})"


def require_columns(table: pd.DataFrame, columns: list[str], path: str | os.PathLike[str]) -> None:
    """Name the first missing column, with a hint when the delimiter looks wrong."""
    for column in columns:
        if column not in table.columns:
            raise MissingColumnError(f"{path}: no column '{column}'{delimiter_hint(table)}")


def write_table(
    table: pd.DataFrame, path: str | os.PathLike[str], delimiter: str | None = None
) -> None:
    """Write CSV (or Parquet by extension) atomically: no partial file on failure."""
    check_output_format(path)
    with atomic_path(path) as tmp:
        write_table_to(table, tmp, Path(path), delimiter)


def write_table_to(table: Table, path: Path, like: Path, delimiter: str | None = None) -> None:
    """Write `table` to `path` in the format `like`'s suffix names (for staged temporaries).

    `delimiter` applies to ``.csv``/``.txt`` outputs (commands pass the input's, so a
    ``;``-separated table comes back ``;``-separated); ``.tsv``/``.tab`` are always tab.
    `table` is a DataFrame or an Arrow table; a text file holds only the cells' text, so an
    Arrow table is written as it is (a dictionary column as its labels).
    """
    check_output_format(like)
    parquet = like.suffix.lower() in PARQUET_SUFFIXES
    if isinstance(table, pa.Table) and parquet:
        table = _as_frame(table)  # a Parquet file records the pandas types it came from
    arrow = (
        table if isinstance(table, pa.Table) else pa.Table.from_pandas(table, preserve_index=False)
    )
    if parquet:
        import pyarrow.parquet as pq

        pq.write_table(arrow, path)
    elif like.suffix.lower() in TAB_SUFFIXES:
        _write_csv(arrow, path, "\t")
    else:
        _write_csv(arrow, path, _named_delimiter(delimiter) if delimiter else ",")


def _as_frame(table: pa.Table) -> pd.DataFrame:
    """The DataFrame an Arrow table stands for: text columns as Arrow-backed text (what
    :func:`read_table` gives), dictionary columns as Python strings (what
    :func:`fedanon.text.plain_text` makes of a release's Categoricals), so a Parquet file
    written from either holds the same schema and pandas metadata."""
    import numpy as np
    import pandas as pd

    columns: dict[str, pd.Series] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_dictionary(column.type):
            text = column.cast(pa.string()).to_numpy(zero_copy_only=False)
            columns[name] = pd.Series(np.asarray(text, dtype=object), name=name)
        else:
            columns[name] = pd.Series(pd.arrays.ArrowExtensionArray(column), name=name)
    return pd.DataFrame(columns)


def _write_csv(arrow: pa.Table, path: Path, sep: str) -> None:
    """Header by the csv module, rows by Arrow: values unquoted unless one needs quotes."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, delimiter=sep, lineterminator="\n").writerow(arrow.column_names)
    header_bytes = path.stat().st_size
    with path.open("r+b") as handle:
        handle.seek(header_bytes)
        try:
            pa_csv.write_csv(
                arrow,
                handle,
                pa_csv.WriteOptions(include_header=False, delimiter=sep, quoting_style="none"),
            )
        except pa.ArrowInvalid:
            handle.seek(header_bytes)
            handle.truncate(header_bytes)
            pa_csv.write_csv(
                arrow, handle, pa_csv.WriteOptions(include_header=False, delimiter=sep)
            )
