"""Input errors end as one line on stderr with exit code 2, never a traceback (defect 9).

Every case here used to end in a Python traceback with exit code 1. Commands run in-process; the
directory is snapshotted to show that a refused command creates and changes nothing.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedanon.errors import FedanonError
from fedanon.models.lkc import parse_confidence
from fedanon.schema import parse_confidence_bound
from tests.harness.cli import TAXONOMY, run_cli, small_table, snapshot

from .test_cli_output_safety import NUMERIC

BAD_C = ["nan", "NaN", "inf", "-inf", "abc", "1/0", "0", "-0.2", "1.5", "", "20", "0x1", "1e400"]


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "taxonomy.toml").write_text(TAXONOMY, encoding="utf-8")
    (tmp_path / "data.csv").write_text(small_table(), encoding="utf-8")
    (tmp_path / "numbers.csv").write_text(NUMERIC, encoding="utf-8")
    (tmp_path / "random.hchy").write_bytes(bytes(range(256)) * 3)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def lkc_args(command: str, C: str, taxonomy: str = "taxonomy.toml") -> list[str]:
    head = ["anonymize", "lkc"] if command == "anonymize" else ["sim", "lkc", "--insecure"]
    return [
        *head,
        "--data",
        "data.csv",
        "--taxonomy",
        taxonomy,
        "--drop",
        "pid",
        "--L",
        "2",
        "--k",
        "4",
        f"--C={C}",
        "--out",
        "r.csv",
        "--quiet",
    ]


def assert_one_line_error(done, before: dict, work: Path, message: str) -> None:
    assert done.code == 2, done.err
    lines = [line for line in done.err_lines if "WARNING: --insecure" not in line]
    assert len(lines) == 1 and "Traceback" not in done.err, done.err
    assert message in lines[0]
    assert snapshot(work) == before


@pytest.mark.parametrize("command", ["anonymize", "sim"])
@pytest.mark.parametrize("C", BAD_C)
def test_bad_C_is_one_line(work, command, C):
    before = snapshot(work)
    done = run_cli(*lkc_args(command, C))
    assert_one_line_error(done, before, work, "C must be")


def test_C_as_percent_is_accepted_by_anonymize(work):
    done = run_cli(*lkc_args("anonymize", "50%"), "--json")
    assert done.code == 0, done.err
    assert '"C": "1/2"' in done.out


@pytest.mark.parametrize("command", ["anonymize", "sim"])
def test_random_bytes_as_hchy_is_one_line(work, command):
    before = snapshot(work)
    done = run_cli(*lkc_args(command, "0.5", taxonomy="random.hchy"))
    assert_one_line_error(done, before, work, "random.hchy: not a text taxonomy file")


@pytest.mark.parametrize("option", ["--L", "--k"])
@pytest.mark.parametrize("value", ["abc", "2.5", "", "nan"])
def test_bad_integers_are_one_line_usage_errors(work, option, value):
    args = lkc_args("anonymize", "0.5")
    args[args.index(option) + 1] = value
    before = snapshot(work)
    done = run_cli(*args)
    assert_one_line_error(done, before, work, f"argument {option}: invalid int value")


def test_sim_drbt_more_clusters_than_rows_is_one_line(work):
    before = snapshot(work)
    done = run_cli(
        "sim", "drbt", "--data", "numbers.csv", "--clusters", "5000", "--insecure", "--out", "r.csv"
    )
    assert_one_line_error(done, before, work, "--clusters 5000 exceeds the table's 30 rows")


@pytest.mark.parametrize(
    ("directory", "message"),
    [("/proc/fedanon-ca", "cannot write the CA"), ("random.hchy", "cannot write the CA")],
)
def test_certs_init_in_an_unwritable_place_is_one_line(work, directory, message):
    before = snapshot(work)
    assert_one_line_error(run_cli("certs", "init", "--dir", directory), before, work, message)


def test_check_reads_a_parquet_release(work):
    done = run_cli(*lkc_args("anonymize", "0.5")[:-3], "--out", "r.parquet", "--quiet")
    assert done.code == 0, done.err
    check = ("check", "lkc", "--data", "r.parquet", "--taxonomy", "taxonomy.toml", "--L", "2")
    ok = run_cli(*check, "--k", "4", "--C", "50%")
    assert ok.code == 0, ok.out + ok.err
    assert "LKC-privacy holds" in ok.out
    # The same release against a stricter K: the checker must see the real groups.
    too_strict = run_cli(*check, "--k", "41", "--C", "50%")
    assert too_strict.code == 1 and "VIOLATED" in too_strict.out


def test_check_on_a_broken_parquet_file_is_one_line(work):
    Path("broken.parquet").write_bytes(b"PAR1 not really")
    before = snapshot(work)
    done = run_cli(
        "check", "lkc", "--data", "broken.parquet", "--qid", "age", "--L", "1", "--k", "2"
    )
    assert_one_line_error(done, before, work, "cannot read broken.parquet")


C_TEXTS = st.one_of(
    st.fractions(min_value=-2, max_value=2).map(str),
    st.decimals(allow_nan=True, allow_infinity=True).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-5, 200).map(lambda n: f"{n}%"),
    st.text(alphabet="0123456789./%-+eE naif", max_size=8),
)


@settings(max_examples=300, deadline=None)
@given(text=C_TEXTS)
def test_the_anonymizers_C_parser_agrees_with_the_checkers(text):
    """The checker keeps its own parser (it shares no code with the algorithms); both must read
    every text the same way, or a release could be checked against another C than it was made
    for."""

    def parsed(parse) -> Fraction | str:
        try:
            return parse(text)
        except FedanonError:
            return "refused"

    assert parsed(parse_confidence_bound) == parsed(parse_confidence)
