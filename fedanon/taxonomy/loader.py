"""One entry point for every taxonomy format, chosen from the path.

Users name a taxonomy on the command line or in a config file without saying which format it is;
the path says it: a directory or ``.csv`` file(s) are ARX hierarchies, ``.hchy`` is the LKC
paper authors' format, ``.toml`` is ours.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from fedanon.errors import FedanonError
from fedanon.taxonomy.arx import arx_attribute_files, read_arx_directory, read_arx_files
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.hchy import read_hchy
from fedanon.taxonomy.toml_format import read_toml_taxonomy

PathLike = str | os.PathLike[str]


def load_taxonomy(
    path: PathLike | Sequence[PathLike], *, data_columns: Sequence[str] | None = None
) -> TaxonomyFile:
    """Read a taxonomy in whichever supported format `path` names.

    `data_columns` (the table's header, when known) is only needed to match ARX hierarchy files
    to columns: it lets a directory also hold unrelated CSVs (such as the data itself) and accepts
    ARX's ``<prefix>_<column>.csv`` naming. The other formats name their attributes themselves.
    """
    paths = [Path(path)] if isinstance(path, str | os.PathLike) else [Path(p) for p in path]
    try:
        return _load(paths, data_columns)
    except UnicodeDecodeError as exc:
        raise FedanonError(
            f"{', '.join(map(str, paths))}: not a text taxonomy file (byte {exc.start} is not "
            "UTF-8)"
        ) from None
    except OSError as exc:
        raise FedanonError(f"{exc.filename or paths[0]}: cannot read ({exc.strerror})") from None


def _load(paths: list[Path], data_columns: Sequence[str] | None) -> TaxonomyFile:
    """The reader chosen by the paths' form (see :func:`load_taxonomy`)."""
    if not paths:
        raise FedanonError("no taxonomy file given")
    for p in paths:
        if not p.exists():
            raise FedanonError(f"{p}: taxonomy file not found")
    if len(paths) == 1 and paths[0].is_dir():
        return read_arx_directory(paths[0], data_columns)
    suffixes = {p.suffix.lower() for p in paths}
    if suffixes == {".csv"}:
        files = arx_attribute_files(paths, data_columns, strict=True)
        return read_arx_files(files, ", ".join(str(p) for p in paths), data_columns)
    if len(paths) == 1 and suffixes == {".hchy"}:
        return read_hchy(paths[0])
    if len(paths) == 1 and suffixes == {".toml"}:
        return read_toml_taxonomy(paths[0])
    raise FedanonError(
        f"{', '.join(str(p) for p in paths)}: unknown taxonomy format (expected a .toml file, "
        "a .hchy file, or ARX hierarchy .csv files or their directory)"
    )
