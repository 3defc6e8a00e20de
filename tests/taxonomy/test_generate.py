"""`fedanon taxonomy init`: generated trees cover the data, nest, export to ARX, give a release.

The TOML output is read back by an outline parser written here (not fedanon's), so a tree that
fedanon writes but does not nest, or that misses a value, fails on its own terms.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedanon.taxonomy.loader import load_taxonomy
from fedanon.taxonomy.tree import Taxonomy
from tests.harness.cli import run_cli

_INTERVAL = re.compile(r"^\[(-?[0-9.]+), (-?[0-9.]+)\)$")


def _table(tmp_path: Path, rows: int = 300) -> Path:
    rng = np.random.default_rng(7)
    jobs = ["nurse", "doctor", "clerk", "porter", "surgeon"]
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 95, rows),
            "weight": np.round(rng.normal(72.5, 12.0, rows), 1),
            "job": rng.choice(jobs, rows),
            "admitted": [f"20{20 + i % 3}-{1 + i % 12:02d}-{1 + i % 28:02d}" for i in range(rows)],
            "disease": rng.choice(["flu", "HIV", "cold"], rows),
        }
    )
    path = tmp_path / "raw.csv"
    frame.to_csv(path, index=False)
    return path


def _outline(text: str) -> list[tuple[int, str]]:
    """(depth, label) per line of an outline with two-space indentation."""
    return [((len(line) - len(line.lstrip(" "))) // 2, line.strip()) for line in text.splitlines()]


def _children(nodes: list[tuple[int, str]]) -> dict[int, list[int]]:
    """Index of each node -> indices of its children."""
    out: dict[int, list[int]] = {i: [] for i in range(len(nodes))}
    stack: list[int] = []
    for i, (depth, _) in enumerate(nodes):
        del stack[depth:]
        if stack:
            out[stack[-1]].append(i)
        stack.append(i)
    return out


def _bounds(label: str) -> tuple[float, float]:
    match = _INTERVAL.match(label)
    assert match, label
    return float(match.group(1)), float(match.group(2))


def _assert_intervals_nest_and_cover(tree: str, values: pd.Series) -> None:
    nodes = _outline(tree)
    kids = _children(nodes)
    for parent, children in kids.items():
        if children:
            lo, hi = _bounds(nodes[parent][1])
            spans = [_bounds(nodes[c][1]) for c in children]
            assert spans[0][0] == lo and spans[-1][1] == hi, nodes[parent]
            assert all(a[1] == b[0] and a[0] < a[1] for a, b in itertools.pairwise(spans)), spans
    leaves = [_bounds(label) for i, (_, label) in enumerate(nodes) if not kids[i]]
    for v in values.astype(float):
        assert sum(lo <= v < hi for lo, hi in leaves) == 1, v


def _init(tmp_path: Path, *options: str | Path) -> dict:
    out = tmp_path / "tax.toml"
    result = run_cli("taxonomy", "init", "--data", _table(tmp_path), "--out", out, *options)
    assert result.code == 0, result.err
    return tomllib.loads(out.read_text(encoding="utf-8"))


def test_generated_trees_cover_every_value_and_intervals_nest(tmp_path: Path) -> None:
    mapping = tmp_path / "jobs.csv"
    mapping.write_text(
        "nurse,care,clinical\ndoctor,medicine,clinical\nsurgeon,medicine,clinical\n"
        "clerk,office,support\nporter,facilities,support\n",
        encoding="utf-8",
    )
    doc = _init(
        tmp_path,
        *("--qid", "age,weight,job,admitted,disease"),
        *("--numeric", "age=quantile:4,2", "--numeric", "weight=width:3,2"),
        *("--groups", f"job={mapping}", "--date", "admitted=month"),
    )
    raw = pd.read_csv(tmp_path / "raw.csv", dtype=str)
    assert doc["qids"] == ["age", "weight", "job", "admitted", "disease"]
    for column in ("age", "weight"):
        assert doc["attributes"][column]["kind"] == "numeric"
        _assert_intervals_nest_and_cover(doc["attributes"][column]["tree"], raw[column])
    age = _outline(doc["attributes"]["age"]["tree"])
    assert [label for depth, label in age if depth == 0] == ["[18, 95)"]  # min, max + 1
    # quantile:4,2: 4 intervals of about a quarter of the records each, each cut in 2
    top = [_bounds(label) for depth, label in age if depth == 1]
    assert len(top) == 4 and len([d for d, _ in age if d == 2]) == 8
    ages = raw["age"].astype(int).to_numpy()
    for lo, hi in top:
        assert abs(((ages >= lo) & (ages < hi)).sum() - len(ages) / 4) <= 12
    weight = _outline(doc["attributes"]["weight"]["tree"])
    widths = {round(hi - lo, 6) for lo, hi in (_bounds(x) for d, x in weight if d == 1)}
    assert len(widths) <= 2 and max(widths) - min(widths) <= 0.1 + 1e-9  # equal up to rounding
    assert all(round(b, 1) == b for _, x in weight for b in _bounds(x))  # the data's precision
    # categorical trees hold every value as a leaf, under the right groups
    for column in ("job", "admitted", "disease"):
        nodes = _outline(doc["attributes"][column]["tree"])
        kids = _children(nodes)
        leaves = {label for i, (_, label) in enumerate(nodes) if not kids[i]}
        assert leaves == set(raw[column]), column
    job = doc["attributes"]["job"]["tree"]
    assert job.startswith("Any\n") and "\n    care\n      nurse\n" in job
    assert "\n  clinical\n    medicine\n      doctor\n      surgeon\n    care\n" in job
    admitted = _outline(doc["attributes"]["admitted"]["tree"])
    assert (1, "2021") in admitted and (2, "2021-02") in admitted
    assert _outline(doc["attributes"]["disease"]["tree"]) == [
        (0, "Any"),
        (1, "HIV"),
        (1, "cold"),
        (1, "flu"),
    ]


def test_arx_export_round_trips_through_the_arx_reader(tmp_path: Path) -> None:
    data = _table(tmp_path)
    qids = ("--qid", "age,job,admitted", "--numeric", "age=quantile:3,2")
    toml, arx = tmp_path / "t.toml", tmp_path / "arx"
    for out, fmt in ((toml, "toml"), (arx, "arx")):
        result = run_cli("taxonomy", "init", "--data", data, *qids, "--format", fmt, "--out", out)
        assert result.code == 0, result.err
    raw = pd.read_csv(data, dtype=str)
    rows = (arx / "age.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == raw["age"].nunique() and len({r.count(";") for r in rows}) == 1
    from_toml = load_taxonomy(toml).taxonomies
    from_arx = load_taxonomy(arx, data_columns=list(raw.columns)).taxonomies
    for column in ("age", "job", "admitted"):
        for value in raw[column].unique():
            assert _chain(from_arx[column], value) == _chain(from_toml[column], value), value


def _chain(tax: Taxonomy, value: str) -> list[str]:
    """Labels from the value's leaf up to the root, the value itself and repeats left out."""
    atom = int(tax.encode(pd.Series([value], dtype=object))[0])
    node = next(n for n in range(tax.n_nodes) if not tax.children[n] and tax.atom_lo[n] == atom)
    labels: list[str] = []
    while node != -1:
        if tax.labels[node] != value and (not labels or labels[-1] != tax.labels[node]):
            labels.append(tax.labels[node])
        node = tax.parent[node]
    return labels


def test_raw_csv_to_checked_release_with_no_hand_written_file(tmp_path: Path) -> None:
    data, tax, out = _table(tmp_path), tmp_path / "tax.toml", tmp_path / "release.csv"
    steps = [
        ("taxonomy", "init", "--data", data, "--qid", "age,job,admitted", "--out", tax),
        ("anonymize", "lkc", "--data", data, "--taxonomy", tax, "--L", "2", "--k", "5"),
        ("check", "lkc", "--data", out, "--taxonomy", tax, "--L", "2", "--k", "5"),
    ]
    for i, step in enumerate(steps):
        extra = ("--C", "1", "--out", out, "--quiet") if i == 1 else ()
        result = run_cli(*step, *extra)
        assert result.code == 0, (step, result.err)
    release = pd.read_csv(out, dtype=str)
    for subset in (["age", "job"], ["age", "admitted"], ["job", "admitted"]):
        assert release.groupby(subset).size().min() >= 5  # L = 2, K = 5 by brute force


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--qid", "age,nope"), "no column 'nope'"),
        (("--qid", "job", "--numeric", "job=quantile:3"), "--numeric job: value '"),
        (("--qid", "age", "--numeric", "age=quantile:1"), "at least 2 bins"),
        (("--qid", "age", "--numeric", "age=quantile:x"), "whole numbers"),
        (("--qid", "age", "--numeric", "age=median:3"), "unknown method 'median'"),
        (("--qid", "age", "--numeric", "weight=width:3"), "--numeric weight: not one of the QIDs"),
        (("--qid", "job", "--date", "job"), "is not a date YYYY-MM-DD"),
        (("--qid", "age", "--numeric", "age"), "expected COL=VALUE"),
        (("--qid", "job", "--groups", "job=missing.csv"), "cannot read"),
    ],
)
def test_bad_options_are_one_line_errors_and_write_nothing(
    tmp_path: Path, options: tuple[str, ...], message: str
) -> None:
    out = tmp_path / "tax.toml"
    result = run_cli("taxonomy", "init", "--data", _table(tmp_path), "--out", out, *options)
    assert result.code == 2 and message in result.err, result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    assert not out.exists()


def test_a_value_named_like_the_root_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "t.csv"
    data.write_text("job\nAny\nnurse\n", encoding="utf-8")
    out = tmp_path / "tax.toml"
    result = run_cli("taxonomy", "init", "--data", data, "--qid", "job", "--out", out)
    assert result.code == 2 and "value 'Any' is the root's label" in result.err
    assert not out.exists()


def test_unmapped_value_and_existing_output_are_refused(tmp_path: Path) -> None:
    mapping = tmp_path / "jobs.csv"
    mapping.write_text("nurse,care\ndoctor,care\n", encoding="utf-8")
    out = tmp_path / "tax.toml"
    data = _table(tmp_path)
    result = run_cli(
        "taxonomy", "init", "--data", data, "--qid", "job", "--groups", f"job={mapping}",
        "--out", out,
    )  # fmt: skip
    assert result.code == 2 and "is not mapped (3 value(s) missing)" in result.err
    out.write_text("mine", encoding="utf-8")
    result = run_cli("taxonomy", "init", "--data", data, "--qid", "job", "--out", out)
    assert result.code == 2 and "already exists" in result.err
    assert out.read_text(encoding="utf-8") == "mine"
    arx = tmp_path / "arx"
    arx.mkdir()
    result = run_cli("taxonomy", "init", "--data", data, "--qid", "job", "--format", "arx",
                     "--out", arx)  # fmt: skip
    assert result.code == 2 and "already exists" in result.err and not any(arx.iterdir())
