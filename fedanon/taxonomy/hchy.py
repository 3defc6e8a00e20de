"""Reader for the ``.hchy`` taxonomy format of the LKC paper's authors.

Reading their own file lets us reproduce the paper's experiments with exactly their trees, QIDs
and sensitive values. The format, as their file and C++ reader use it:

- ``|`` starts a comment that runs to the end of the line;
- each section is a header ``name:continuous`` or ``name:discrete[:generalization]`` followed by
  a brace tree ``{Any {Child ...} ...}``; a label is the text up to the next brace (it may hold
  spaces, e.g. ``Any Class``); continuous labels are half-open intervals ``lo-hi``;
- ``classes:discrete`` is the class attribute (the data's ``class`` column);
- ``VID:`` ``{{{100} {attr} ...}}``: one virtual identifier, a weight (ignored) then the QIDs;
- ``sensitive:`` ``{{0.5 col:value} ...}``: the sensitive values, each after a threshold (ignored).

Section names ``VID``, ``sensitive`` and ``classes`` are matched case-insensitively, as the
authors' reader does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from fedanon.errors import FedanonError
from fedanon.readers.inputs import read_input, text_of
from fedanon.taxonomy.files import SensitiveValue, TaxonomyFile, check_consistency
from fedanon.taxonomy.tree import Spec, Taxonomy, require_depth

CLASS_COLUMN = "class"
"""The data column that the ``classes`` section describes."""

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_INTERVAL = re.compile(rf"^({_NUMBER})\s*-\s*({_NUMBER})$")
_HEADER = re.compile(r"^([^{}:]+?)\s*:\s*([A-Za-z]*)\s*(?::\s*([A-Za-z]*)\s*)?$")


@dataclass
class _Node:
    """A brace node as written: its label (None when absent), children and the line it opens on."""

    label: str | None
    line: int
    children: list[_Node] = field(default_factory=list)


@dataclass
class _Token:
    kind: str  # "{", "}" or "text"
    text: str
    line: int


def read_hchy(path: Path) -> TaxonomyFile:
    """Read a ``.hchy`` file (see the module docstring for the format)."""
    with text_of(read_input(Path(path))) as text:  # one read: a party's digest hashes it
        return parse_hchy(text.read(), str(path))


def parse_hchy(text: str, source: str) -> TaxonomyFile:
    """Parse ``.hchy`` text; errors name `source` and the line at fault."""
    tokens = _tokenize(text)
    taxonomies: dict[str, Taxonomy] = {}
    tf = TaxonomyFile(taxonomies=taxonomies, source=source)
    seen_sections: set[str] = set()
    pos = 0
    while pos < len(tokens):
        tok = tokens[pos]
        if tok.kind != "text":
            raise FedanonError(
                f"{source}:{tok.line}: expected a section header like 'age:continuous', "
                f"found '{tok.text}'"
            )
        name, kind, mask = _parse_header(tok, source)
        pos += 1
        if pos >= len(tokens) or tokens[pos].kind != "{":
            raise FedanonError(f"{source}:{tok.line}: section '{name}' has no brace tree")
        tree, pos = _parse_tree(tokens, pos, source)
        key = name.lower() if name.lower() in ("vid", "sensitive", "classes") else name
        if key in seen_sections:
            raise FedanonError(f"{source}:{tok.line}: section '{name}' appears twice")
        seen_sections.add(key)
        if key == "vid":
            tf.qids = _vid(tree, source)
        elif key == "sensitive":
            tf.sensitive = _sensitive(tree, source)
        else:
            column = CLASS_COLUMN if key == "classes" else name
            if column in taxonomies:
                raise FedanonError(f"{source}:{tok.line}: attribute '{column}' is defined twice")
            taxonomies[column] = _attribute(column, kind, mask, tree, source)
            if key == "classes":
                if kind != "discrete":
                    raise FedanonError(f"{source}:{tok.line}: 'classes' must be discrete")
                tf.class_column = column
                tf.class_values = list(taxonomies[column].atom_labels)
    return check_consistency(tf)


def _tokenize(text: str) -> list[_Token]:
    """Split into braces and label texts; text never spans lines, comments are dropped."""
    tokens: list[_Token] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("|", 1)[0]
        for piece in re.split(r"([{}])", line):
            if piece in ("{", "}"):
                tokens.append(_Token(piece, piece, number))
            elif piece.strip():
                tokens.append(_Token("text", piece.strip(), number))
    return tokens


def _parse_header(tok: _Token, source: str) -> tuple[str, str, str | None]:
    match = _HEADER.match(tok.text)
    if not match:
        raise FedanonError(
            f"{source}:{tok.line}: expected a header like 'age:continuous' or "
            f"'sex:discrete', found '{tok.text}'"
        )
    name, kind, mask = match.group(1).strip(), match.group(2).lower(), match.group(3)
    return name, kind, (mask.lower() if mask else None)


def _parse_tree(tokens: list[_Token], pos: int, source: str) -> tuple[_Node, int]:
    """Parse one brace tree starting at ``tokens[pos] == '{'``; return it and the next position.

    Iterative, so a deeply nested (or malicious) file cannot exhaust the recursion limit.
    """
    root = _Node(None, tokens[pos].line)
    stack = [root]
    pos += 1
    if pos < len(tokens) and tokens[pos].kind == "text":
        root.label = tokens[pos].text
        pos += 1
    while stack:
        if pos >= len(tokens):
            raise FedanonError(f"{source}:{stack[-1].line}: '{{' opened here is never closed")
        tok = tokens[pos]
        pos += 1
        if tok.kind == "}":
            stack.pop()
        elif tok.kind == "{":
            node = _Node(None, tok.line)
            stack[-1].children.append(node)
            stack.append(node)
            if pos < len(tokens) and tokens[pos].kind == "text":
                node.label = tokens[pos].text
                pos += 1
        else:
            raise FedanonError(
                f"{source}:{tok.line}: unexpected text '{tok.text}' (a label must come right "
                "after its '{' and before the children)"
            )
    return root, pos


def _attribute(name: str, kind: str, mask: str | None, tree: _Node, source: str) -> Taxonomy:
    if mask not in (None, "generalization"):
        raise FedanonError(
            f"{source}:{tree.line}: '{name}': only ':generalization' is supported, not '{mask}'"
        )
    require_depth(tree, lambda node: node.children, f"{source}:{tree.line}: '{name}'")
    if kind == "continuous":
        spec = _interval_spec(tree, name, source)
        build = Taxonomy.numeric
    elif kind == "discrete":
        spec = _label_spec(tree, name, source)
        build = Taxonomy.categorical
    else:
        raise FedanonError(
            f"{source}:{tree.line}: '{name}': type must be 'continuous' or 'discrete', not '{kind}'"
        )
    try:
        return build(name, spec)
    except FedanonError as err:
        raise FedanonError(f"{source}:{tree.line}: {err}") from None


def _label_spec(node: _Node, name: str, source: str) -> Spec:
    if node.label is None:
        raise FedanonError(f"{source}:{node.line}: '{name}': a node has no label")
    return Spec(node.label, [_label_spec(c, name, source) for c in node.children])


def _interval_spec(node: _Node, name: str, source: str) -> Spec:
    match = _INTERVAL.match(node.label or "")
    if not match:
        raise FedanonError(
            f"{source}:{node.line}: '{name}': '{node.label or ''}' is not an interval 'lo-hi'"
        )
    lo, hi = float(match.group(1)), float(match.group(2))
    children = [_interval_spec(c, name, source) for c in node.children]
    return Spec(node.label or "", children, lo, hi)


def _vid(tree: _Node, source: str) -> list[str]:
    """``{{{weight} {attr} ...}}`` -> the attribute names; exactly one VID is supported."""
    if tree.label is not None or len(tree.children) != 1:
        raise FedanonError(
            f"{source}:{tree.line}: VID must be '{{{{{{weight}} {{attr}} ...}}}}' "
            "(exactly one virtual identifier)"
        )
    vid = tree.children[0]
    items = vid.children
    if vid.label is not None or not items or any(i.children or i.label is None for i in items):
        raise FedanonError(f"{source}:{vid.line}: VID entries must be '{{weight}} {{attr}} ...'")
    if not re.fullmatch(_NUMBER, items[0].label or ""):
        raise FedanonError(
            f"{source}:{vid.line}: VID must start with a numeric weight, not '{items[0].label}'"
        )
    return [i.label for i in items[1:] if i.label is not None]


def _sensitive(tree: _Node, source: str) -> list[SensitiveValue]:
    """``{{threshold col:value} ...}`` -> the sensitive values."""
    if tree.label is not None or not tree.children:
        raise FedanonError(f"{source}:{tree.line}: sensitive must be '{{{{t col:value}} ...}}'")
    values: list[SensitiveValue] = []
    for item in tree.children:
        parts = (item.label or "").split(None, 1)
        if item.children or len(parts) != 2 or not re.fullmatch(_NUMBER, parts[0]):
            raise FedanonError(
                f"{source}:{item.line}: sensitive entry must be '{{threshold column:value}}', "
                f"found '{{{item.label or ''}}}'"
            )
        column, sep, value = parts[1].partition(":")
        if not sep or not column.strip() or not value.strip():
            raise FedanonError(
                f"{source}:{item.line}: sensitive entry '{parts[1]}' is not 'column:value'"
            )
        values.append(SensitiveValue(column.strip(), value.strip()))
    return values
