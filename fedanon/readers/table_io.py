"""Reading and writing tables (CSV or Parquet) with the CLI's guarantees.

Values are read as Arrow-backed text so that every non-QID column is released byte-for-byte as it
came in, and numerical QIDs are parsed only where a taxonomy needs numbers (Arrow's cast, much
faster than parsing Python strings). Writes go through Arrow's CSV writer and are atomic.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from fedanon.atomic import atomic_path
from fedanon.errors import FedanonError


def _delimiter_for(path: Path, delimiter: str | None) -> str:
    if delimiter:
        if delimiter in ("\\t", "tab"):
            return "\t"
        if len(delimiter) != 1:
            raise FedanonError(f"--delimiter must be one character (got '{delimiter}')")
        return delimiter
    return "\t" if path.suffix.lower() in {".tsv", ".tab"} else ","


def _header(path: Path, delimiter: str) -> list[str]:
    with path.open(newline="", encoding="utf-8") as handle:
        row = next(csv.reader(handle, delimiter=delimiter), None)
    if not row:
        raise FedanonError(f"{path}: empty file (no header line)")
    return [c.strip() for c in row]


def read_table(path: str | os.PathLike[str], delimiter: str | None = None) -> pd.DataFrame:
    """Read a CSV/TSV (with header) or Parquet file; every column as Arrow-backed text."""
    path = Path(path)
    if not path.exists():
        raise FedanonError(f"{path}: file not found")
    if path.is_dir():
        raise FedanonError(f"{path}: is a directory, expected a table file")
    try:
        if path.suffix.lower() in {".parquet", ".pq"}:
            table = pq.read_table(path)
            table = table.cast(pa.schema([(n, pa.string()) for n in table.column_names]))
        else:
            sep = _delimiter_for(path, delimiter)
            names = _header(path, sep)
            if len(set(names)) != len(names):
                raise FedanonError(f"{path}: a column name appears twice in the header")
            table = pa_csv.read_csv(
                path,
                read_options=pa_csv.ReadOptions(column_names=names, skip_rows=1),
                parse_options=pa_csv.ParseOptions(delimiter=sep),
                convert_options=pa_csv.ConvertOptions(
                    column_types={n: pa.string() for n in names}, strings_can_be_null=False),
            )
    except (pa.ArrowInvalid, OSError, UnicodeDecodeError) as exc:
        raise FedanonError(f"{path}: cannot read table ({str(exc).splitlines()[0]})") from exc
    return table.to_pandas(types_mapper=pd.ArrowDtype)


def delimiter_hint(table: pd.DataFrame) -> str:
    """A hint for 'missing column' errors when the whole header landed in one column."""
    if len(table.columns) != 1:
        return ""
    return (f" (the file was read as a single column '{str(table.columns[0])[:40]}': "
            "does it use another delimiter? try --delimiter)")


def require_columns(table: pd.DataFrame, columns: list[str], path: str | os.PathLike[str]) -> None:
    """Name the first missing column, with a hint when the delimiter looks wrong."""
    for column in columns:
        if column not in table.columns:
            raise FedanonError(f"{path}: no column '{column}'{delimiter_hint(table)}")


def write_table(table: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write CSV (or Parquet by extension) atomically: no partial file on failure."""
    with atomic_path(path) as tmp:
        write_table_to(table, tmp, Path(path))


def write_table_to(table: pd.DataFrame, path: Path, like: Path) -> None:
    """Write `table` to `path` in the format `like`'s suffix names (for staged temporaries)."""
    arrow = pa.Table.from_pandas(table, preserve_index=False)
    if like.suffix.lower() in {".parquet", ".pq"}:
        pq.write_table(arrow, path)
    else:
        _write_csv(arrow, path, _delimiter_for(like, None))


def _write_csv(arrow: pa.Table, path: Path, sep: str) -> None:
    """Header by the csv module, rows by Arrow: values unquoted unless one needs quotes."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, delimiter=sep, lineterminator="\n").writerow(arrow.column_names)
    header_bytes = path.stat().st_size
    with path.open("r+b") as handle:
        handle.seek(header_bytes)
        try:
            pa_csv.write_csv(arrow, handle, pa_csv.WriteOptions(
                include_header=False, delimiter=sep, quoting_style="none"))
        except pa.ArrowInvalid:
            handle.seek(header_bytes)
            handle.truncate(header_bytes)
            pa_csv.write_csv(arrow, handle, pa_csv.WriteOptions(include_header=False,
                                                                delimiter=sep))
