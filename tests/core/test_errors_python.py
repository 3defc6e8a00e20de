"""Errors that fit Python: a notebook catches fedanon's errors as ValueError / KeyError.

`FedanonError` is a `ValueError`; a missing column is a `MissingColumnError`, also a `KeyError`
(as pandas raises for ``df["nope"]``) whose message stays one unquoted line. The command line
prints the same one line as before and exits 2.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

import fedanon
from fedanon.errors import FedanonError, InfeasibleError, MissingColumnError
from tests.harness.cli import TAXONOMY, run_cli, small_table

TABLE = pd.DataFrame({"age": ["30", "40"] * 5, "job": ["a", "b"] * 5, "d": ["x", "y"] * 5})


def test_the_error_classes_are_value_and_key_errors() -> None:
    assert issubclass(FedanonError, ValueError) and issubclass(InfeasibleError, ValueError)
    assert issubclass(MissingColumnError, FedanonError) and issubclass(MissingColumnError, KeyError)
    error = MissingColumnError("t.csv: no column 'x'")
    assert str(error) == "t.csv: no column 'x'"  # KeyError alone would print "\"t.csv: ...\""


@pytest.mark.parametrize(
    "call",
    [
        lambda: fedanon.check_k_anonymity(TABLE, qids=["age", "nope"], k=2),
        lambda: fedanon.check_lkc(TABLE, qids=["age", "nope"], L=1, k=2, C=1),
        lambda: fedanon.check_alpha_k(
            TABLE, qids=["age", "nope"], sensitive_column="d", alpha=1, k=2
        ),
        lambda: fedanon.check_alpha_k(TABLE, qids=["age"], sensitive_column="nope", alpha=1, k=2),
    ],
)
def test_a_missing_column_is_caught_as_key_error_with_a_one_line_message(
    call: Callable[[], object],
) -> None:
    with pytest.raises(KeyError) as caught:
        call()
    assert isinstance(caught.value, FedanonError)
    text = str(caught.value)
    assert "nope" in text and "\n" not in text and not text.startswith(("'", '"'))


@pytest.mark.parametrize(
    "call",
    [
        lambda: fedanon.check_k_anonymity(TABLE, qids=["age"], k=0),
        lambda: fedanon.check_lkc(TABLE, qids=["age"], L=1, k=2, C="2"),
        lambda: fedanon.check_alpha_k(TABLE, qids=["age"], sensitive_column="d", alpha="x", k=2),
    ],
)
def test_a_bad_value_is_caught_as_value_error(call: Callable[[], object]) -> None:
    try:
        call()
    except ValueError as error:
        assert isinstance(error, FedanonError) and "\n" not in str(error)
    else:
        pytest.fail("no error")


def test_a_wrapped_error_keeps_its_own_message() -> None:
    """A `except ValueError` around library code must not swallow a FedanonError's message."""
    with pytest.raises(FedanonError, match="needs the column 'items'"):
        fedanon.sanitize(pd.DataFrame({"basket": ["1 2"]}), rules=["1 => 2"], algorithm="ra")


def test_the_command_line_still_prints_one_unquoted_line(tmp_path: Path) -> None:
    data, taxonomy = tmp_path / "t.csv", tmp_path / "t.toml"
    data.write_text(small_table(), encoding="utf-8")
    taxonomy.write_text(TAXONOMY, encoding="utf-8")
    result = run_cli(
        *("anonymize", "lkc", "--data", data, "--taxonomy", taxonomy, "--qid", "age,nope"),
        *("--L", "1", "--k", "2", "--C", "1", "--out", tmp_path / "o.csv"),
    )
    assert result.code == 2
    assert result.err.startswith("fedanon: error: ") and result.err.count("\n") == 1
    assert "nope" in result.err and "Traceback" not in result.err and '"' not in result.err
    result = run_cli("check", "lkc", "--data", data, "--qid", "age,nope", "--L", "1", "--k", "2")
    assert result.code == 2 and result.err == ("fedanon: error: column not in the table: nope\n"), (
        result.err
    )
