"""Generate taxonomies from a table, so that no LKC or (alpha,k) run needs a hand-written tree.

Three kinds of tree, each covering every value of its column (docs/taxonomies.md, "Generating
taxonomies"):

* numbers: nested half-open intervals with readable bounds. ``quantile:4,2`` splits the range
  into 4 intervals holding about equal numbers of records, then each of those into 2;
  ``width:4,2`` splits into equal widths. Bounds are rounded to the data's precision (integers
  for integer columns), so labels read ``[20, 35)``, not ``[19.999, 35.0001)``;
* dates (ISO ``YYYY-MM-DD``): value -> ``YYYY-MM`` -> ``YYYY`` -> ``Any`` (``month``), or
  value -> ``YYYY`` -> ``Any`` (``year``);
* categories: flat (value -> ``Any``) or grouped by a mapping file whose rows are
  ``value,group[,coarser group...]``.

The result is a :class:`TaxonomyFile`, written in the TOML format users edit
(:func:`fedanon.taxonomy.toml_format.dump_toml_taxonomy`) or as ARX hierarchies
(:func:`arx_rows`, one row per data value, as ARX's own files).
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError, MissingColumnError
from fedanon.taxonomy.files import TaxonomyFile, check_consistency
from fedanon.taxonomy.tree import Spec, Taxonomy, format_number

ROOT = "Any"
DEFAULT_NUMERIC = "quantile:4,4"
DATE_LEVELS = ("month", "year")
_DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
# A value or group named like the root would be released as the root: indistinguishable.
_ROOT_CLASH = "no value or group may be named so (rename it in the data or the mapping)"


@dataclass(frozen=True)
class NumericSpec:
    """How to cut a numeric column: ``method`` and the fan-out of each level, root first."""

    method: str
    fans: tuple[int, ...]

    @classmethod
    def parse(cls, text: str, where: str) -> NumericSpec:
        """``quantile:4,2`` or ``width:5``; a one-line error naming `where` otherwise."""
        method, _, fans = text.partition(":")
        if method not in ("quantile", "width"):
            raise FedanonError(
                f"{where}: unknown method '{method}' (use quantile:N[,M...] or width:N[,M...])"
            )
        try:
            numbers = tuple(int(f) for f in fans.split(","))
        except ValueError:
            raise FedanonError(
                f"{where}: bins must be whole numbers separated by commas, e.g. {method}:4,2"
            ) from None
        if not numbers or any(f < 2 for f in numbers):
            raise FedanonError(f"{where}: every level needs at least 2 bins, got '{fans}'")
        return cls(method, numbers)


def generate_taxonomies(
    table: pd.DataFrame,
    qids: Sequence[str],
    source: str,
    numeric: dict[str, NumericSpec] | None = None,
    dates: dict[str, str] | None = None,
    groups: dict[str, Path] | None = None,
) -> TaxonomyFile:
    """One tree per QID of `table` (read as text), chosen by the options or the column's values.

    Columns named in `numeric`, `dates` or `groups` get that kind; any other column is numeric
    (``quantile:4,4``) when every value is a finite number, a date tree when every value is an
    ISO date, and a flat categorical tree otherwise.
    """
    numeric, dates, groups = numeric or {}, dates or {}, groups or {}
    for option, named in (("--numeric", numeric), ("--date", dates), ("--groups", groups)):
        for column in named:
            if column not in qids:
                raise FedanonError(f"{option} {column}: not one of the QIDs ({', '.join(qids)})")
    trees: dict[str, Taxonomy] = {}
    for column in qids:
        if column not in table.columns:
            raise MissingColumnError(f"{source}: no column '{column}'")
        values = table[column].astype(str)
        empty = np.flatnonzero((values.str.strip() == "").to_numpy())
        if empty.size:
            raise FedanonError(
                f"{source}: column '{column}' has an empty cell (first at row {empty[0] + 1}); "
                "fill or remove it before generating a taxonomy"
            )
        if column in groups:
            trees[column] = grouped_tree(column, values, groups[column])
        elif column in dates:
            trees[column] = date_tree(column, values, dates[column], source)
        elif column in numeric or _all_numbers(values):
            spec = numeric.get(column) or NumericSpec.parse(DEFAULT_NUMERIC, column)
            trees[column] = interval_tree(column, _numbers(column, values, source), spec)
        elif values.str.match(_DATE_PATTERN).all():
            trees[column] = date_tree(column, values, "month", source)
        else:
            trees[column] = flat_tree(column, values)
    return check_consistency(TaxonomyFile(taxonomies=trees, qids=list(qids), source=source))


def _all_numbers(values: pd.Series) -> bool:
    return bool(np.isfinite(pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)).all())


def _numbers(column: str, values: pd.Series, source: str) -> np.ndarray:
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(numbers))
    if bad.size:
        raise FedanonError(
            f"{source}: --numeric {column}: value '{values.iloc[bad[0]]}' (row {bad[0] + 1}) "
            "is not a finite number (use --groups or no option for a text column)"
        )
    return numbers


# ------------------------------------------------------------------------------------- numbers
def interval_tree(column: str, numbers: np.ndarray, spec: NumericSpec) -> Taxonomy:
    """Nested ``[lo, hi)`` intervals covering every number, cut level by level (root first)."""
    unit = _unit(numbers)
    lo = math.floor(float(numbers.min()) / unit) * unit
    hi = (math.floor(float(numbers.max()) / unit) + 1) * unit  # the largest value inside
    root = _interval(lo, hi, unit)
    _split(root, np.sort(numbers), spec, 0, unit)
    return Taxonomy.numeric(column, root)


def _unit(numbers: np.ndarray) -> float:
    """The rounding step of the bounds: 1 for integers, else about a hundredth of the range."""
    if np.all(numbers == np.round(numbers)):
        return 1.0
    spread = float(numbers.max() - numbers.min()) or abs(float(numbers.max())) or 1.0
    return float(10.0 ** (math.floor(math.log10(spread)) - 2))


def _snap(x: float, unit: float) -> float:
    """`x` rounded to a multiple of `unit`, printed without float noise (0.30000000000000004)."""
    return round(round(x / unit) * unit, max(0, -math.floor(math.log10(unit))))


def _interval(lo: float, hi: float, unit: float) -> Spec:
    lo, hi = _snap(lo, unit), _snap(hi, unit)
    return Spec(f"[{format_number(lo)}, {format_number(hi)})", lo=lo, hi=hi)


def _split(node: Spec, numbers: np.ndarray, spec: NumericSpec, level: int, unit: float) -> None:
    """Cut `node` into up to ``spec.fans[level]`` children; recurse into each.

    Quantile cuts that would leave an interval without records are merged away (several cuts
    fall on one frequent value); equal-width cuts are kept as they are.
    """
    assert node.lo is not None and node.hi is not None
    inside = numbers[(numbers >= node.lo) & (numbers < node.hi)]
    if level >= len(spec.fans) or np.unique(inside).size < 2:
        return
    fan = spec.fans[level]
    if spec.method == "quantile":
        raw = np.quantile(inside, np.arange(1, fan) / fan, method="lower")
    else:
        raw = node.lo + (node.hi - node.lo) * np.arange(1, fan) / fan
    cuts = sorted({_snap(c, unit) for c in raw} - {node.lo, node.hi})
    cuts = [c for c in cuts if node.lo < c < node.hi]
    if spec.method == "quantile":
        kept: list[float] = []
        for c in cuts:  # keep a cut only when the interval it closes holds records
            if np.any((inside >= (kept[-1] if kept else node.lo)) & (inside < c)):
                kept.append(c)
        while kept and not np.any(inside >= kept[-1]):
            kept.pop()
        cuts = kept
    if not cuts:
        return
    bounds = [node.lo, *cuts, node.hi]
    for a, b in itertools.pairwise(bounds):
        child = _interval(a, b, unit)
        node.children.append(child)
        _split(child, inside, spec, level + 1, unit)


# ------------------------------------------------------------------------------- dates, groups
def date_tree(column: str, values: pd.Series, level: str, source: str) -> Taxonomy:
    """value -> YYYY-MM -> YYYY -> Any (``month``) or value -> YYYY -> Any (``year``)."""
    if level not in DATE_LEVELS:
        raise FedanonError(f"--date {column}: level must be month or year, not '{level}'")
    distinct = sorted(values.unique().tolist())
    parsed = pd.to_datetime(pd.Series(distinct), format="%Y-%m-%d", errors="coerce")
    if parsed.isna().any():
        bad = distinct[int(np.flatnonzero(parsed.isna().to_numpy())[0])]
        raise FedanonError(f"{source}: --date {column}: '{bad}' is not a date YYYY-MM-DD")
    paths = [
        [f"{d:%Y}", f"{d:%Y-%m}", v] if level == "month" else [f"{d:%Y}", v]
        for v, d in zip(distinct, parsed, strict=True)
    ]
    return Taxonomy.categorical(column, _tree_of_paths(column, paths, f"--date {column}"))


def grouped_tree(column: str, values: pd.Series, mapping: Path) -> Taxonomy:
    """Values grouped by `mapping` (CSV rows ``value,group[,coarser...]``), then ``Any``."""
    try:
        with Path(mapping).open(encoding="utf-8-sig", newline="") as handle:
            rows = [r for r in csv.reader(handle) if any(c.strip() for c in r)]
    except OSError as err:
        raise FedanonError(f"--groups {column}: {mapping}: cannot read ({err.strerror})") from None
    where = f"--groups {column}: {mapping}"
    paths: dict[str, list[str]] = {}
    for number, row in enumerate(rows, start=1):
        cells = [c.strip() for c in row]
        if len(cells) < 2 or not all(cells):
            raise FedanonError(f"{where}, line {number}: needs value,group[,group...], no blanks")
        if cells[0] in paths:
            raise FedanonError(f"{where}, line {number}: value '{cells[0]}' is mapped twice")
        paths[cells[0]] = [*reversed(cells[1:]), cells[0]]
    missing = sorted(set(values.unique()) - set(paths))
    if missing:
        raise FedanonError(
            f"{where}: value '{missing[0]}' of the data is not mapped "
            f"({len(missing)} value(s) missing)"
        )
    used = [paths[v] for v in sorted(values.unique())]
    return Taxonomy.categorical(column, _tree_of_paths(column, used, where))


def flat_tree(column: str, values: pd.Series) -> Taxonomy:
    """One level: every distinct value directly under ``Any``."""
    if (values == ROOT).any():
        raise FedanonError(f"column '{column}': value '{ROOT}' is the root's label: {_ROOT_CLASH}")
    return Taxonomy.categorical(
        column, Spec(ROOT, [Spec(v) for v in sorted(values.unique().tolist())])
    )


def _tree_of_paths(column: str, paths: list[list[str]], where: str) -> Spec:
    """A tree under ``Any`` from root-to-leaf label paths; a label keeps one parent."""
    root = Spec(ROOT)
    nodes: dict[str, tuple[Spec, str]] = {}  # label -> (node, parent label)
    for path in paths:
        parent, parent_label = root, ROOT
        for label in path:
            if label == ROOT:
                raise FedanonError(f"{where}: '{ROOT}' is the root's label: {_ROOT_CLASH}")
            if label not in nodes:
                nodes[label] = (Spec(label), parent_label)
                parent.children.append(nodes[label][0])
            elif nodes[label][1] != parent_label:
                raise FedanonError(
                    f"{where}: '{label}' sits under both '{nodes[label][1]}' and "
                    f"'{parent_label}' in the taxonomy of '{column}'"
                )
            parent, parent_label = nodes[label][0], label
    return root


# ------------------------------------------------------------------------------------ ARX export
def arx_rows(tax: Taxonomy, values: pd.Series) -> list[list[str]]:
    """ARX's hierarchy rows of `tax` for the distinct `values`: value, its generalizations, root.

    ARX lists raw values (not intervals), one row each, all rows of one length: a value whose
    leaf is shallower repeats its deepest generalization, as ARX does for an unbalanced tree.
    """
    distinct = sorted(values.astype(str).unique().tolist())
    leaves = tax.encode(pd.Series(distinct, dtype=object))
    leaf_of_atom = {tax.atom_lo[n]: n for n in range(tax.n_nodes) if not tax.children[n]}
    paths = []
    for value, atom in zip(distinct, leaves, strict=True):
        node = leaf_of_atom[int(atom)]
        path = []
        while node != -1:
            path.append(tax.labels[node])
            node = tax.parent[node]
        if tax.kind == "categorical":
            path = path[1:]  # the leaf is the value itself
        paths.append([value, *path])
    depth = max(len(p) for p in paths)
    return [[p[0], *([p[1]] * (depth - len(p))), *p[1:]] for p in paths]


def write_arx_directory(tf: TaxonomyFile, table: pd.DataFrame, directory: Path) -> list[Path]:
    """Write ``<attribute>.csv`` (``;``-separated, as ARX writes) per tree into `directory`."""
    written = []
    for column, tax in tf.taxonomies.items():
        path = directory / f"{column}.csv"
        with path.open("w", encoding="utf-8", newline="") as handle:
            csv.writer(handle, delimiter=";", lineterminator="\n").writerows(
                arx_rows(tax, table[column])
            )
        written.append(path)
    return written
