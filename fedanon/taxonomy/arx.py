"""Reader for ARX hierarchy CSVs: one file per attribute, rows ``leaf;...;*``.

ARX is the most widely used open anonymization tool, so accepting its hierarchies lets users
bring trees they already have. Each row is one raw value's path read right to left, from the
root (last field) down to the value (first field). Nodes are identified by their whole path from
the root, so a label that recurs under different parents stays two different nodes instead of
silently merging two branches.

Rows may differ in length (a value may sit deeper than another) as long as the rows agree: one
root for all rows, and no label that is a raw value in one row and a generalization on the same
path in another.

So that ARX users need to say nothing ARX did not ask them: the delimiter is detected (ARX writes
``;``; ``,`` and tab are accepted), the attributes that have a hierarchy are the default QIDs
(ARX makes an attribute with a hierarchy quasi-identifying), and a hierarchy whose leaves are all
numbers (ARX's age) matches data values by number, as ARX does for an integer attribute: ``39.0``
and ``039`` find leaf ``39``. Any other leaf matches by its exact text.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fedanon.errors import FedanonError
from fedanon.readers.inputs import read_input, text_of
from fedanon.taxonomy.files import TaxonomyFile, check_consistency
from fedanon.taxonomy.tree import MAX_DEPTH, Spec, Taxonomy, depth_error


@dataclass
class _Node:
    label: str
    line: int
    is_value: bool = False
    children: dict[str, _Node] = field(default_factory=dict)


def arx_attribute_files(
    paths: Sequence[Path], data_columns: Sequence[str] | None = None, *, strict: bool = True
) -> dict[str, Path]:
    """Match hierarchy files to attributes.

    A file ``<attribute>.csv`` is the hierarchy of ``<attribute>``. When the table's columns are
    known, a file also matches column ``c`` by the suffix ``_c`` (ARX's own examples are named
    ``adult_hierarchy_age.csv``), and a file matching no column is an error when `strict` (the
    user named it) or skipped otherwise (a directory may also hold the data file).
    """
    found: dict[str, Path] = {}
    for path in sorted(Path(p) for p in paths):
        stem = path.stem
        if data_columns is None:
            attribute: str | None = stem
        elif stem in data_columns:
            attribute = stem
        else:
            matches = [c for c in data_columns if stem.endswith(f"_{c}")]
            attribute = max(matches, key=len) if matches else None
        if attribute is None:
            if strict:
                raise FedanonError(f"{path}: ARX hierarchy file matches no data column")
            continue
        if attribute in found:
            raise FedanonError(
                f"{path}: a second ARX hierarchy for '{attribute}' (first: {found[attribute]})"
            )
        found[attribute] = path
    return found


def read_arx_directory(directory: Path, data_columns: Sequence[str] | None = None) -> TaxonomyFile:
    """Read every ``*.csv`` hierarchy in `directory` (see :func:`arx_attribute_files`)."""
    files = arx_attribute_files(sorted(Path(directory).glob("*.csv")), data_columns, strict=False)
    if not files:
        from fedanon.readers.table_io import header_hint

        hint = header_hint(list(data_columns)) if data_columns else ""
        raise FedanonError(f"{directory}: no ARX hierarchy files (*.csv) found{hint}")
    return read_arx_files(files, source=str(directory), data_columns=data_columns)


def read_arx_files(
    files: dict[str, Path], source: str, data_columns: Sequence[str] | None = None
) -> TaxonomyFile:
    """Build one taxonomy per attribute from its hierarchy file; they are the default QIDs.

    The QIDs are listed in the table's column order when it is known (file order otherwise).
    """
    taxonomies = {
        attribute: read_arx_hierarchy(attribute, path) for attribute, path in files.items()
    }
    order = [c for c in data_columns if c in taxonomies] if data_columns else list(taxonomies)
    return check_consistency(TaxonomyFile(taxonomies=taxonomies, qids=order, source=source))


def read_arx_hierarchy(attribute: str, path: Path) -> Taxonomy:
    """Read one ARX hierarchy file into a taxonomy of `attribute` (delimiter detected)."""
    with text_of(read_input(Path(path)), newline="") as handle:  # one read (inputs.py)
        text = handle.read()
    rows = list(csv.reader(io.StringIO(text), delimiter=hierarchy_delimiter(text), quotechar='"'))
    return parse_arx_rows(attribute, rows, str(path))


def hierarchy_delimiter(text: str) -> str:
    """``;`` (what ARX writes) if the first row has one, else ``,``, else tab.

    Only the first non-blank row decides, and ``;`` wins over ``,`` because labels such as
    ``Married, spouse absent`` may contain commas in a ``;`` file.
    """
    first = next((line for line in text.splitlines() if line.strip()), "")
    for candidate in (";", ",", "\t"):
        if candidate in first:
            return candidate
    return ";"


def parse_arx_rows(attribute: str, rows: list[list[str]], source: str) -> Taxonomy:
    """Turn ``leaf;level1;...;root`` rows into a tree; errors name `source` and the line."""
    root: _Node | None = None
    value_lines: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        if not any(field.strip() for field in row):
            continue
        if len(row) < 2:
            raise FedanonError(
                f"{source}:{number}: a row needs at least a value and the root, e.g. 'x;*'"
            )
        if len(row) > MAX_DEPTH + 1:
            raise depth_error(f"{source}:{number}")
        empty = [i + 1 for i, value in enumerate(row) if value == ""]
        if empty:
            raise FedanonError(f"{source}:{number}: field {empty[0]} is empty")
        if row[0] in value_lines:
            raise FedanonError(
                f"{source}:{number}: value '{row[0]}' is listed again "
                f"(first on line {value_lines[row[0]]})"
            )
        value_lines[row[0]] = number
        path = list(reversed(row))
        if root is None:
            root = _Node(path[0], number)
        elif path[0] != root.label:
            raise FedanonError(
                f"{source}:{number}: root '{path[0]}' differs from '{root.label}' "
                f"(line {root.line}); every row must end in the same root"
            )
        _add_path(root, path, number, source)
    if root is None:
        raise FedanonError(f"{source}: the hierarchy file is empty")
    tree = Taxonomy.categorical(attribute, _to_spec(root))
    tree.match_leaves_by_number()  # all-number leaves (age): matched by value, as in ARX
    return tree


def _add_path(root: _Node, path: list[str], number: int, source: str) -> None:
    """Walk/extend the tree along `path` (root first); a value must never be an inner node."""
    node = root
    for depth, label in enumerate(path[1:], start=1):
        is_value = depth == len(path) - 1
        child = node.children.get(label)
        if child is None:
            child = node.children[label] = _Node(label, number, is_value=is_value)
        elif child.is_value or is_value:
            raise FedanonError(
                f"{source}:{number}: '{label}' is a raw value on line "
                f"{number if is_value else child.line} and a generalization on line "
                f"{child.line if is_value else number}; rows of different lengths must agree"
            )
        node = child


def _to_spec(node: _Node) -> Spec:
    return Spec(node.label, [_to_spec(child) for child in node.children.values()])
