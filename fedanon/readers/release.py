"""Released tables read back for checking: every cell as the exact text that was written.

A checker must see a release the way its recipient does, so nothing is parsed: no NA detection
and no numbers (``"01"`` stays ``"01"``). Used by every ``fedanon check`` command. The file is
opened once (:class:`ReadOnce`, as every input table): its delimiter is sniffed from the first
bytes of the stream pandas then parses, so a release replaced meanwhile is checked whole in
one version.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pandas.io.common import infer_compression  # type: ignore[import-not-found]  # no stub

from fedanon.errors import FedanonError
from fedanon.readers.inputs import ReadOnce
from fedanon.readers.table_io import input_delimiter


def read_release(path: str, delimiter: str | None) -> pd.DataFrame:
    """The released CSV with every cell as the exact string written (no NA or number parsing).

    Without a `delimiter`, the one the header line uses (as for every input table).
    """
    if not Path(path).is_file():
        raise FedanonError(f"data file not found: {path}")
    if Path(path).suffix.lower() in {".parquet", ".pq"}:
        return _read_parquet(path)
    try:
        with ReadOnce(Path(path)) as stream:
            sep = input_delimiter(Path(path), delimiter, stream)
            # pandas reads an `io` binary file as it reads a path (the same cells, the same
            # errors), but infers a compression (".gz") only from a path: from its name here
            compression = infer_compression(path, "infer")
            return pd.read_csv(
                stream.binary_file(),
                sep=sep,
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                compression=compression,
            )
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
        with ReadOnce(Path(path)) as stream:
            table = pq.read_table(stream.random_access())
        columns = [pc.fill_null(pc.cast(col, pa.string()), "") for col in table.columns]
    except (pa.ArrowException, OSError) as exc:
        # Arrow's dataset layer names its source: an open file's "<Buffer>", a path's the path
        text = str(exc).strip().replace("'<Buffer>'", f"'{path}'")
        first_line = text.splitlines()[0] if text else type(exc).__name__
        raise FedanonError(f"cannot read {path}: {first_line}") from None
    return pd.DataFrame(
        {name: col.to_pylist() for name, col in zip(table.column_names, columns, strict=True)},
        dtype=object,
    )
