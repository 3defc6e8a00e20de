"""Every table the CLI and the central algorithms read is opened once (session 13, one reading
path): a file replaced while a command reads it gives the whole of one version, never the
delimiter or header of one and the rows of another.

The watched file is replaced by a real ``os.replace`` right after each open of it for reading
returns (an audit hook sees the open, a profile hook its return): a reader that opens it once
reads the version it opened to the end (its open file keeps it), one that opens it again, in
Python or inside Arrow's C++ (which raises no audit event), meets the other version.
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fedanon.errors import FedanonError
from fedanon.readers.release import read_release
from fedanon.readers.table_io import read_arrow, read_arrow_delimited, read_table
from tests.harness.cli import run_cli

#: The handlers the audit hook calls (a hook cannot be removed: it dispatches to these only).
_on_event: list[Callable[[str, tuple[object, ...]], None]] = []


def _audit(event: str, args: tuple[object, ...]) -> None:
    for handler in _on_event:
        handler(event, args)


sys.addaudithook(_audit)

Watch = Callable[[Path, bytes, bytes], list[str]]


@pytest.fixture
def replaced_after_open(tmp_path: Path) -> Iterator[Watch]:
    """`watch(path, a, b)`: `path` holds `a`; right after each open of it for reading
    returns, it is replaced by the other version (b, then a, ...). Returns the log of its
    opens for reading."""
    staged = itertools.count()
    watched: dict[str, tuple[list[str], tuple[bytes, bytes]]] = {}
    pending: list[str] = []  # a watched path whose open has not returned yet

    def on_event(event: str, args: tuple[object, ...]) -> None:
        if event != "open" or not isinstance(args[0], str | os.PathLike):
            return
        path, mode = os.fspath(args[0]), args[1]
        if path in watched and not (isinstance(mode, str) and any(c in mode for c in "wax+")):
            watched[path][0].append(path)
            pending.append(path)

    def on_profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "c_return" and pending and arg in (io.open, os.open):
            path = pending.pop()
            opens, versions = watched[path]
            source = tmp_path / "staged" / f"{next(staged)}{Path(path).suffix}"
            source.parent.mkdir(exist_ok=True)
            source.write_bytes(versions[len(opens) % 2])  # the other version
            os.replace(source, path)

    def watch(path: Path, a: bytes, b: bytes) -> list[str]:
        path.write_bytes(a)
        opens: list[str] = []
        watched[str(path)] = (opens, (a, b))
        return opens

    _on_event.append(on_event)
    profile = sys.getprofile()
    sys.setprofile(on_profile)
    try:
        yield watch
    finally:
        sys.setprofile(profile)
        _on_event.remove(on_event)


def _parquet(text: str) -> bytes:
    lines = [line.split(",") for line in text.splitlines()]
    columns = {name: [row[i] for row in lines[1:]] for i, name in enumerate(lines[0])}
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns), sink)
    return bytes(sink.getvalue().to_pybytes())


TABLES = {  # name, delimiter option -> (version A, version B): other delimiters, rows, lengths
    ("t.csv", None): (b"age;sex\n30;M\n41;F\n", b"age,sex,zip\n52,F,1\n"),
    ("t.csv", ","): (b"age,sex\n30,M\n", b"age,sex\n" + b"61,F\n" * 5000),
    ("t.tsv", None): (b"age\tsex\n30\tM\n", b"age\tzip\n70\t2\n71\t3\n"),
    ("t.txt", "|"): (b"age|sex\n30|M\n", b"age|sex|zip\n80|F|1\n"),
    ("t.parquet", None): (_parquet("age,sex\n30,M\n"), _parquet("age,zip\n90,1\n91,2\n")),
}


def _outcome(read: Callable[[], object]) -> object:
    """What a read gives, comparable: a table's columns and cells, or its one-line error."""
    try:
        result = read()
    except FedanonError as exc:
        return "error", str(exc)
    if isinstance(result, tuple):  # read_arrow_delimited
        return result[0].to_pydict(), result[1]
    if isinstance(result, pd.DataFrame):
        return [str(c) for c in result.columns], result.astype(str).values.tolist()
    assert isinstance(result, pa.Table)
    return result.to_pydict()


READERS: dict[str, Callable[[Path, str | None], object]] = {
    "read_arrow": read_arrow,
    "read_arrow one column": lambda path, sep: read_arrow(path, sep, columns=["age"]),
    "read_table": read_table,
    "read_arrow_delimited": read_arrow_delimited,
    "read_release": lambda path, sep: read_release(str(path), sep),
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize(("name", "delimiter"), list(TABLES))
def test_a_table_replaced_between_opens_is_read_whole_in_one_version(
    tmp_path: Path,
    replaced_after_open: Watch,
    reader: str,
    name: str,
    delimiter: str | None,
) -> None:
    read = READERS[reader]
    a, b = TABLES[name, delimiter]
    versions = []
    for label, content in (("a", a), ("b", b)):
        stable = tmp_path / label / name
        stable.parent.mkdir()
        stable.write_bytes(content)
        versions.append(_outcome(functools.partial(read, stable, delimiter)))
    assert versions[0] != versions[1]
    table = tmp_path / "live" / name
    table.parent.mkdir()
    opens = replaced_after_open(table, a, b)
    seen = _outcome(lambda: read(table, delimiter))
    assert len(opens) == 1
    assert seen == versions[0]


def test_anonymize_reads_its_table_and_the_delimiter_it_writes_from_one_open(
    tmp_path: Path, replaced_after_open: Watch
) -> None:
    """`fedanon anonymize lkc` writes its release with the input's delimiter, and its report
    names the input by its SHA-256: all three come from the one read of the table (the
    delimiter was found by a fourth open before, the digest by a fifth)."""
    from tests.readers.test_formats import TAXONOMY

    taxonomy = tmp_path / "tax.toml"
    taxonomy.write_text(TAXONOMY, encoding="utf-8")
    rows = [f"{'MF'[i % 2]};{1 + i % 4};n{i}" for i in range(40)]
    a = ("sex;zip;note\n" + "\n".join(rows) + "\n").encode()
    b = ("sex,zip,note\n" + "\n".join(r.replace(";", ",") for r in rows[:20]) + "\n").encode()
    job = ("--taxonomy", taxonomy, "--L", "2", "--k", "5", "--C", "1", "--quiet")
    releases = []
    for label, content in (("a", a), ("b", b)):
        data = tmp_path / f"{label}.csv"
        data.write_bytes(content)
        out = tmp_path / f"out-{label}.csv"
        assert run_cli("anonymize", "lkc", "--data", data, *job, "--out", out).code == 0
        releases.append(out.read_bytes())
    assert releases[0] != releases[1] and releases[0].startswith(b"sex;zip;note\n")
    for report in (None, tmp_path / "report.json"):
        data = tmp_path / f"live-{report is None}.csv"
        opens = replaced_after_open(data, a, b)
        out = tmp_path / f"out-{report is None}.csv"
        asked = () if report is None else ("--report", report)
        result = run_cli("anonymize", "lkc", "--data", data, *job, "--out", out, *asked)
        assert result.code == 0, result.err
        assert len(opens) == 1
        assert out.read_bytes() == releases[0]
    # the steward report names the table by the digest of the version anonymized (A)
    assert report is not None
    inputs = json.loads(report.read_text())["release_report"]["job"]["inputs"]
    assert inputs[0] == {"path": str(data), "sha256": hashlib.sha256(a).hexdigest()}
