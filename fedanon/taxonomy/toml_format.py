'''fedanon's own taxonomy format: one human-editable TOML file per dataset.

One file holds everything a job needs besides L, K, C: the trees, the QIDs, the sensitive values
and the class. Example::

    qids = ["age", "sex"]

    [sensitive]
    diagnosis = ["HIV", "Schizophrenia"]

    [class]
    column = "readmitted"
    values = ["no", "yes"]

    [attributes.sex]
    kind = "categorical"
    tree = """
    Any
      Female
      Male
    """

    [attributes.age]
    kind = "numeric"
    tree = """
    [0, 120)
      [0, 40)
      [40, 120)
    """

    [attributes.length_of_stay]
    kind = "numeric"
    dynamic = true

Trees are outlines (see :mod:`fedanon.taxonomy.outline`). Every section is optional except
``attributes``; unknown keys are errors, so a typo cannot silently drop a setting.
'''

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fedanon.errors import FedanonError
from fedanon.readers.inputs import read_input
from fedanon.taxonomy.files import SensitiveValue, TaxonomyFile, check_consistency
from fedanon.taxonomy.outline import format_outline, parse_outline
from fedanon.taxonomy.tree import Taxonomy
from fedanon.tomlconfig import read_text_file

_TOP_KEYS = {"qids", "sensitive", "class", "attributes"}
_ATTRIBUTE_KEYS = {"kind", "tree", "dynamic"}
_CLASS_KEYS = {"column", "values"}


def read_toml_taxonomy(path: Path) -> TaxonomyFile:
    """Read a taxonomy file in our TOML format."""
    return parse_toml_taxonomy(read_text_file(Path(path), read_input), str(path))


def parse_toml_taxonomy(text: str, source: str) -> TaxonomyFile:
    """Parse our TOML format; errors name `source` (and the attribute and outline line)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise FedanonError(f"{source}: not valid TOML: {err}") from None
    _no_unknown_keys(doc, _TOP_KEYS, source)
    attributes = doc.get("attributes")
    if not isinstance(attributes, dict) or not attributes:
        raise FedanonError(f"{source}: needs an [attributes.<name>] table per attribute")
    tf = TaxonomyFile(taxonomies={}, source=source)
    for name, table in attributes.items():
        where = f"{source}: attribute '{name}'"
        if not isinstance(table, dict):
            raise FedanonError(f"{where}: must be a table")
        _no_unknown_keys(table, _ATTRIBUTE_KEYS, where)
        if _attribute_is_dynamic(table, where):
            tf.dynamic_attributes.append(name)
        else:
            tf.taxonomies[name] = _given_tree(name, table, where)
    if "qids" in doc:
        tf.qids = _string_list(doc["qids"], f"{source}: qids")
    if "sensitive" in doc:
        tf.sensitive = _sensitive(doc["sensitive"], source)
    if "class" in doc:
        tf.class_column, tf.class_values = _class(doc["class"], source)
    return check_consistency(tf)


def _attribute_is_dynamic(table: dict[str, Any], where: str) -> bool:
    kind = table.get("kind")
    if kind not in ("categorical", "numeric"):
        raise FedanonError(f'{where}: kind must be "categorical" or "numeric", not {kind!r}')
    dynamic = table.get("dynamic", False)
    if not isinstance(dynamic, bool):
        raise FedanonError(f"{where}: dynamic must be true or false")
    if dynamic and kind != "numeric":
        raise FedanonError(f"{where}: only numeric attributes can be dynamic")
    if dynamic and "tree" in table:
        raise FedanonError(f"{where}: a dynamic attribute has no tree (it is grown from data)")
    if not dynamic and not isinstance(table.get("tree"), str):
        raise FedanonError(f"{where}: needs a tree (a multi-line string) or dynamic = true")
    return dynamic


def _given_tree(name: str, table: dict[str, Any], where: str) -> Taxonomy:
    numeric = table["kind"] == "numeric"
    spec = parse_outline(table["tree"], where, numeric=numeric)
    build: Callable[..., Taxonomy] = Taxonomy.numeric if numeric else Taxonomy.categorical
    try:
        return build(name, spec)
    except FedanonError as err:
        raise FedanonError(f"{where}: {err}") from None


def _sensitive(value: object, source: str) -> list[SensitiveValue]:
    if not isinstance(value, dict):
        raise FedanonError(f"{source}: [sensitive] must map a column to a list of values")
    return [
        SensitiveValue(column, item)
        for column, items in value.items()
        for item in _string_list(items, f"{source}: sensitive.{column}")
    ]


def _class(value: object, source: str) -> tuple[str, list[str] | None]:
    if not isinstance(value, dict):
        raise FedanonError(f"{source}: [class] must be a table with 'column' and 'values'")
    _no_unknown_keys(value, _CLASS_KEYS, f"{source}: [class]")
    column = value.get("column")
    if not isinstance(column, str) or not column:
        raise FedanonError(f'{source}: [class] needs column = "<name>"')
    values = _string_list(value["values"], f"{source}: class.values") if "values" in value else None
    return column, values


def _string_list(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise FedanonError(f"{where}: must be a list of non-empty strings")
    return list(value)


def _no_unknown_keys(table: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise FedanonError(
            f"{where}: unknown key '{unknown[0]}' (allowed: {', '.join(sorted(allowed))})"
        )


# ---------------------------------------------------------------------------------- writing
def dump_toml_taxonomy(tf: TaxonomyFile) -> str:
    """Write `tf` in our TOML format, so that :func:`parse_toml_taxonomy` reads it back equal.

    Sensitive values come out grouped by column. A dynamic `Taxonomy` (grown from data) is
    written as ``dynamic = true``: its splits depend on the data, not on the file.
    """
    out: list[str] = []
    if tf.qids is not None:
        out.append(f"qids = {_array(tf.qids)}\n")
    if tf.sensitive is not None:
        by_column: dict[str, list[str]] = {}
        for s in tf.sensitive:
            by_column.setdefault(s.column, []).append(s.value)
        out.append("[sensitive]")
        out.extend(f"{_key(column)} = {_array(values)}" for column, values in by_column.items())
        out.append("")
    if tf.class_column is not None:
        out.append("[class]")
        out.append(f"column = {_string(tf.class_column)}")
        if tf.class_values is not None:
            out.append(f"values = {_array(tf.class_values)}")
        out.append("")
    for name, tax in tf.taxonomies.items():
        out.append(f"[attributes.{_key(name)}]")
        out.append(f"kind = {_string(tax.kind)}")
        if tax.is_dynamic:
            out.append("dynamic = true")
        else:
            out.append(f'tree = """\n{_escape(format_outline(tax))}"""')
        out.append("")
    for name in tf.dynamic_attributes:
        out.extend([f"[attributes.{_key(name)}]", 'kind = "numeric"', "dynamic = true", ""])
    return "\n".join(out)


def _escape(text: str) -> str:
    """Escape for a TOML basic string (single- or multi-line); newlines stay as they are."""
    parts = []
    for ch in text:
        if ch in ('"', "\\"):
            parts.append("\\" + ch)
        elif ch != "\n" and (ord(ch) < 0x20 or ord(ch) == 0x7F):
            parts.append(f"\\u{ord(ch):04x}")
        else:
            parts.append(ch)
    return "".join(parts)


def _string(text: str) -> str:
    return '"' + _escape(text).replace("\n", "\\n") + '"'


def _array(items: list[str]) -> str:
    return "[" + ", ".join(_string(i) for i in items) + "]"


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _string(name)
