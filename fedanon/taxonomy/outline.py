"""Indented outlines: the tree notation inside our TOML taxonomy files.

One node per line, two spaces of indentation per level, the root unindented::

    Any
      Married
        Married-civ-spouse
      Never-married

Numerical trees use half-open interval labels ``[lo, hi)``. An outline reads like the tree it
describes and diffs line by line, which is why we chose it over nested TOML tables. A label is
the rest of the line with surrounding whitespace removed; blank lines are ignored.
"""

from __future__ import annotations

import re

from fedanon.errors import FedanonError
from fedanon.taxonomy.tree import Spec, Taxonomy, format_number

INDENT = 2

_NUMBER = r"[+-]?(?:inf|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_INTERVAL = re.compile(rf"^\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)$")


def parse_outline(text: str, where: str, *, numeric: bool) -> Spec:
    """Parse an outline into a `Spec`; errors name `where` and the outline's line number."""
    root: Spec | None = None
    stack: list[Spec] = []  # stack[d] is the latest node at depth d
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        if body[0].isspace():
            raise FedanonError(
                f"{where}, line {number}: indent with spaces only (found a tab or other whitespace)"
            )
        if indent % INDENT:
            raise FedanonError(
                f"{where}, line {number}: indentation must be a multiple of {INDENT} spaces"
            )
        depth = indent // INDENT
        node = _node(body.strip(), numeric, where, number)
        if root is None:
            if depth:
                raise FedanonError(f"{where}, line {number}: the root must not be indented")
            root = node
            stack = [node]
            continue
        if depth == 0:
            raise FedanonError(
                f"{where}, line {number}: a second root '{node.label}' (only one is allowed)"
            )
        if depth > len(stack):
            raise FedanonError(
                f"{where}, line {number}: '{node.label}' is indented more than one level "
                "below its parent"
            )
        del stack[depth:]
        stack[-1].children.append(node)
        stack.append(node)
    if root is None:
        raise FedanonError(f"{where}: the tree is empty")
    return root


def _node(label: str, numeric: bool, where: str, number: int) -> Spec:
    if not numeric:
        return Spec(label)
    match = _INTERVAL.match(label)
    if not match:
        raise FedanonError(
            f"{where}, line {number}: '{label}' is not a half-open interval '[lo, hi)'"
        )
    return Spec(label, lo=float(match.group(1)), hi=float(match.group(2)))


def format_outline(tax: Taxonomy) -> str:
    """The outline of a given (not dynamic) taxonomy, one node per line, ending in a newline."""
    lines: list[str] = []
    stack = [tax.root]
    while stack:
        node = stack.pop()
        lines.append(" " * (INDENT * tax.depth[node]) + _label(tax, node))
        stack.extend(reversed(tax.children[node]))
    return "\n".join(lines) + "\n"


def _label(tax: Taxonomy, node: int) -> str:
    if tax.kind == "numeric":
        return f"[{format_number(tax.node_lo[node])}, {format_number(tax.node_hi[node])})"
    label = tax.labels[node]
    if not label or label != label.strip() or len(label.splitlines()) != 1:
        raise FedanonError(
            f"taxonomy of '{tax.attribute}': label {label!r} cannot be written in an outline "
            "(it is empty, spans lines or has surrounding whitespace)"
        )
    return label
