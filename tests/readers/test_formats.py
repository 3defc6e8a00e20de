"""Table formats every command shares: detected delimiters, kept delimiters, Parquet, and output
names whose extension names no format (an error, never a silent CSV)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from fedanon.errors import FedanonError
from fedanon.readers.table_io import (
    read_arrow_delimited,
    read_table,
    require_columns,
    write_table,
)
from tests.harness.cli import CliResult, lkc_options, run_cli

TAXONOMY = """\
qids = ["sex", "zip"]

[attributes.sex]
kind = "categorical"
tree = \"\"\"
Any
  M
  F
\"\"\"

[attributes.zip]
kind = "categorical"
tree = \"\"\"
Any
  North
    1
    2
  South
    3
    4
\"\"\"
"""


@pytest.mark.parametrize(
    ("header", "expected"),
    [("a,b,c", ","), ("a;b;c", ";"), ("a\tb\tc", "\t"), ("a|b", "|"), ("single", ",")],
)
def test_the_header_names_the_delimiter(tmp_path: Path, header: str, expected: str) -> None:
    path = tmp_path / "t.csv"
    row = expected.join(["1"] * (header.count(expected) + 1))
    path.write_text(f"{header}\n{row}\n", encoding="utf-8")
    assert read_arrow_delimited(path)[1] == expected
    assert list(read_table(path).columns) == header.split(expected)


def test_a_given_delimiter_wins_and_a_wrong_one_is_named(tmp_path: Path) -> None:
    path = tmp_path / "semi.csv"
    path.write_text("age;sex\n39;M\n", encoding="utf-8")
    assert read_arrow_delimited(path, "tab")[1] == "\t"
    table = read_table(path, ",")
    with pytest.raises(
        FedanonError, match=r"wrong delimiter.*looks ';'-separated: try --delimiter"
    ):
        require_columns(table, ["sex"], path)


@pytest.mark.parametrize("name", ["release.xlsx", "release.json", "release"])
def test_unknown_output_extension_is_an_error(tmp_path: Path, name: str) -> None:
    with pytest.raises(FedanonError, match=r"unknown output format .*supported: .csv, .parquet"):
        write_table(pd.DataFrame({"a": ["1"]}), tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_csv_takes_the_given_delimiter_tsv_is_always_tab(tmp_path: Path) -> None:
    table = pd.DataFrame({"a": ["1", "x;y"], "b": ["2", "3"]})
    write_table(table, tmp_path / "o.csv", ";")
    assert (tmp_path / "o.csv").read_text(encoding="utf-8").splitlines()[0] == "a;b"
    assert read_table(tmp_path / "o.csv").values.tolist() == table.values.tolist()
    write_table(table, tmp_path / "o.tsv", ";")
    assert (tmp_path / "o.tsv").read_text(encoding="utf-8").splitlines()[0] == "a\tb"
    write_table(table, tmp_path / "o.parquet")
    assert pq.read_table(tmp_path / "o.parquet").to_pydict() == {"a": ["1", "x;y"], "b": ["2", "3"]}


@pytest.fixture
def semicolon_table(tmp_path: Path) -> tuple[Path, Path]:
    rows = ["sex;zip;note"] + [f"{'MF'[i % 2]};{1 + i % 4};n{i}" for i in range(40)]
    data = tmp_path / "data.csv"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    taxonomy = tmp_path / "tax.toml"
    taxonomy.write_text(TAXONOMY, encoding="utf-8")
    return data, taxonomy


def _anonymize_semicolons(data: Path, taxonomy: Path, out: Path, *extra: str) -> CliResult:
    """`anonymize lkc` of the semicolon table at L=2, K=5, C=1 into `out`."""
    job: list[str | Path] = ["anonymize", "lkc", "--data", data, "--taxonomy", taxonomy]
    return run_cli(*job, "--L", "2", "--k", "5", "--C", "1", "--out", out, *extra, "--quiet")


def test_anonymize_keeps_the_input_delimiter(tmp_path: Path, semicolon_table) -> None:
    data, taxonomy = semicolon_table
    out = tmp_path / "out.csv"
    result = _anonymize_semicolons(data, taxonomy, out)
    assert result.code == 0, result.err
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "sex;zip;note" and len(lines) == 41
    assert all(line.count(";") == 2 for line in lines)
    told = tmp_path / "comma.csv"
    result = _anonymize_semicolons(data, taxonomy, told, "--out-delimiter", ",")
    assert result.code == 0, result.err
    assert told.read_text(encoding="utf-8").splitlines()[0] == "sex,zip,note"


def test_anonymize_refuses_an_unknown_extension_before_working(
    tmp_path: Path, semicolon_table
) -> None:
    data, taxonomy = semicolon_table
    job = lkc_options(data, taxonomy, K=5, C="1")
    result = run_cli("anonymize", "lkc", *job, "--out", tmp_path / "out.xlsx", "--quiet")
    assert result.code == 2
    assert result.err_lines == [
        f"fedanon: error: {tmp_path / 'out.xlsx'}: unknown output format (extension '.xlsx'); "
        "supported: .csv, .parquet, .pq, .tab, .tsv, .txt"
    ]
    assert not (tmp_path / "out.xlsx").exists()


def test_parquet_in_and_out_then_checked(tmp_path: Path, semicolon_table) -> None:
    data, taxonomy = semicolon_table
    source = tmp_path / "data.parquet"
    write_table(read_table(data), source)
    out = tmp_path / "out.parquet"
    result = run_cli(
        "anonymize", "lkc", *lkc_options(source, taxonomy, K=5, C="1"), "--out", out, "--quiet"
    )
    assert result.code == 0, result.err
    assert pq.read_table(out).num_rows == 40
    check = run_cli("check", "lkc", "--data", out, "--qid", "sex,zip", "--L", "2", "--k", "5")
    assert check.code == 0, check.err


def test_check_reads_a_semicolon_release_and_names_a_wrong_delimiter(
    tmp_path: Path, semicolon_table
) -> None:
    data, _ = semicolon_table
    assert run_cli("check", "lkc", "--data", data, "--qid", "sex", "--L", "1", "--k", "5").code == 0
    wrong = run_cli(
        "check", "lkc", "--data", data, "--qid", "sex", "--L", "1", "--k", "5", "--delimiter", ","
    )
    assert wrong.code == 2
    assert len(wrong.err_lines) == 1 and "looks ';'-separated" in wrong.err
