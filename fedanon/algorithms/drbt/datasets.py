"""Readers for the public sets the thesis's DRBT experiments used, as the thesis used them.

FIMI files (chess, mushroom, connect; one transaction per line, space-separated item ids) are
read as *numeric rows*: the item ids of a record, in order, are its attribute values. That is the
only reading that gives the dimensions the thesis reports (Chess 37, Mushroom 23, Connect 43):
every record of these sets has exactly one item per original UCI attribute, sorted, and item ids
of one attribute form a contiguous range (Chess attribute 1 is item 1 or 2, attribute 2 item 3
or 4, ...), so column j is attribute j with its values coded by item id. A binary
item-presence matrix would instead have 75, 119 and 129 columns.

Iris is the UCI file's 4 measurements plus the class coded 0, 1, 2 in order of first
appearance (d = 5, the thesis's "5 dimensions"); z-scoring makes any equally spaced coding of
the class equivalent.

Pumsb and Accidents are not in the shared data directory (too large for the reachable sources).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fedanon.errors import FedanonError
from fedanon.readers.datadir import data_dir


def read_fimi_fixed(path: str | os.PathLike[str]) -> np.ndarray:
    """An m x d integer matrix from a FIMI file whose transactions all have d items."""
    path = Path(path)
    rows: list[list[int]] = []
    with path.open(encoding="ascii") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                items = [int(token) for token in line.split()]
            except ValueError as exc:
                raise FedanonError(f"{path}:{number}: not a list of item ids") from exc
            if rows and len(items) != len(rows[0]):
                raise FedanonError(
                    f"{path}:{number}: {len(items)} items, but earlier transactions have "
                    f"{len(rows[0])}; only fixed-length FIMI files can be read as numeric rows"
                )
            rows.append(items)
    if not rows:
        raise FedanonError(f"{path}: no transactions")
    return np.array(rows, dtype=np.int64)


def read_iris(path: str | os.PathLike[str]) -> np.ndarray:
    """An m x 5 float matrix: the 4 Iris measurements and the class code (0, 1, 2)."""
    path = Path(path)
    features: list[list[float]] = []
    classes: list[str] = []
    with path.open(encoding="ascii") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            parts = line.strip().split(",")
            if len(parts) != 5:
                raise FedanonError(f"{path}:{number}: expected 4 measurements and a class")
            try:
                features.append([float(p) for p in parts[:4]])
            except ValueError as exc:
                raise FedanonError(f"{path}:{number}: non-numeric measurement") from exc
            classes.append(parts[4])
    codes = {name: code for code, name in enumerate(dict.fromkeys(classes))}
    return np.column_stack([np.array(features), [codes[c] for c in classes]])


# name -> (path under the data directory, reader)
THESIS_SETS: dict[str, tuple[tuple[str, ...], Callable[[Path], np.ndarray]]] = {
    "iris": (("uci", "iris", "iris.data"), read_iris),
    "chess": (("fimi", "chess.dat"), read_fimi_fixed),
    "mushroom": (("fimi", "mushroom.dat"), read_fimi_fixed),
    "connect": (("fimi", "connect.dat"), read_fimi_fixed),
}

# The thesis's other DRBT sets, absent from the shared data directory.
MISSING_SETS = ("pumsb", "accidents")


def thesis_set_path(name: str) -> Path:
    """Where the named set lives under the data directory (it may be absent)."""
    if name not in THESIS_SETS:
        known = ", ".join(THESIS_SETS)
        raise FedanonError(f"unknown data set '{name}' (available readers: {known})")
    return data_dir().joinpath(*THESIS_SETS[name][0])


def load_thesis_set(name: str) -> np.ndarray:
    """The named set as the thesis's m x d numeric matrix (before z-scoring)."""
    path = thesis_set_path(name)
    if not path.exists():
        raise FedanonError(f"{path}: not found (set FEDANON_DATA_DIR to the shared data folder)")
    return np.asarray(THESIS_SETS[name][1](path), dtype=float)
