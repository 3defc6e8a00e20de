"""Reading and writing tables (CSV or Parquet) with the CLI's guarantees.

Values are read as text so that every non-QID column is released byte-for-byte as it came in;
numerical QIDs are parsed where a taxonomy needs numbers. Writes are atomic (temp file + rename).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from fedanon.atomic import atomic_path
from fedanon.errors import FedanonError


def _delimiter_for(path: Path, delimiter: str | None) -> str:
    if delimiter:
        return delimiter
    return "\t" if path.suffix.lower() in {".tsv", ".tab"} else ","


def read_table(path: str | os.PathLike[str], delimiter: str | None = None) -> pd.DataFrame:
    """Read a CSV/TSV (with header) or Parquet file as strings; errors name the file."""
    path = Path(path)
    if not path.exists():
        raise FedanonError(f"{path}: file not found")
    if path.is_dir():
        raise FedanonError(f"{path}: is a directory, expected a table file")
    try:
        if path.suffix.lower() in {".parquet", ".pq"}:
            table = pd.read_parquet(path).astype(str)
        else:
            table = pd.read_csv(
                path, sep=_delimiter_for(path, delimiter), dtype=str, keep_default_na=False,
                engine="pyarrow",
            )
    except (ValueError, OSError) as exc:
        raise FedanonError(f"{path}: cannot read table ({str(exc).splitlines()[0]})") from exc
    table.columns = [str(c).strip() for c in table.columns]
    return table


def require_columns(table: pd.DataFrame, columns: list[str], path: str | os.PathLike[str]) -> None:
    """Name the first missing column, with a hint when the delimiter looks wrong."""
    for column in columns:
        if column not in table.columns:
            hint = ""
            if len(table.columns) == 1:
                hint = (f" (the file was read as a single column '{table.columns[0][:40]}': "
                        "does it use another delimiter? try --delimiter)")
            raise FedanonError(f"{path}: no column '{column}'{hint}")


def write_table(table: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write CSV (or Parquet by extension) atomically: no partial file on failure."""
    path = Path(path)
    with atomic_path(path) as tmp:
        if path.suffix.lower() in {".parquet", ".pq"}:
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False, sep=_delimiter_for(path, None))
