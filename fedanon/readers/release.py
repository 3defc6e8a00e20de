"""Released tables read back for checking: every cell as the exact text that was written.

A checker must see a release the way its recipient does, so nothing is parsed: no NA detection
and no numbers (``"01"`` stays ``"01"``). Used by every ``fedanon check`` command.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fedanon.errors import FedanonError
from fedanon.readers.table_io import input_delimiter


def read_release(path: str, delimiter: str | None) -> pd.DataFrame:
    """The released CSV with every cell as the exact string written (no NA or number parsing).

    Without a `delimiter`, the one the header line uses (as for every input table).
    """
    if not Path(path).is_file():
        raise FedanonError(f"data file not found: {path}")
    if Path(path).suffix.lower() in {".parquet", ".pq"}:
        return _read_parquet(path)
    sep = input_delimiter(path, delimiter)
    try:
        return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, na_filter=False)
    except pd.errors.EmptyDataError:
        raise FedanonError(f"data file is empty: {path}") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FedanonError(f"cannot read {path}: {first_line}") from None


def _read_parquet(path: str) -> pd.DataFrame:
    """A Parquet release with every cell cast to its text (missing cells as empty strings)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
        columns = [pc.fill_null(pc.cast(col, pa.string()), "") for col in table.columns]
    except (pa.ArrowException, OSError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FedanonError(f"cannot read {path}: {first_line}") from None
    return pd.DataFrame(
        {name: col.to_pylist() for name, col in zip(table.column_names, columns, strict=True)},
        dtype=object,
    )
