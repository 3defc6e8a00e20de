"""The CSR transaction log: FIMI reading and writing, canonical rows, errors with line and token."""

from __future__ import annotations

import numpy as np
import pytest

from fedanon.errors import FedanonError
from fedanon.utility.transactions import Transactions


def test_parse_keeps_every_line_including_empty_ones_and_trailing_blanks():
    tx = Transactions.parse_fimi(b"3 1 2 \n\n7\r\n5 5 4")
    assert len(tx) == 4
    assert tx.to_lists() == [[1, 2, 3], [], [7], [4, 5]]
    assert tx.indptr.tolist() == [0, 3, 3, 4, 6]


def test_write_then_read_is_the_identity(tmp_path):
    tx = Transactions.from_lists([[10, 2], [], [99999999], [1, 2, 3]])
    path = tmp_path / "log.dat"
    tx.write_fimi(path)
    assert path.read_text() == "2 10\n\n99999999\n1 2 3\n"
    assert Transactions.read_fimi(path) == tx


def test_leading_empty_line_and_no_final_newline():
    assert Transactions.parse_fimi(b"\n1 2").to_lists() == [[], [1, 2]]
    assert len(Transactions.parse_fimi(b"")) == 0


@pytest.mark.parametrize(
    ("text", "baskets"), [(b"\n", 1), (b"   \n", 1), (b"\n\n\n", 3), (b"\t\n \n", 2)]
)
def test_a_log_of_empty_transactions_reads_as_empty_transactions(text: bytes, baskets: int):
    """A text without a single item id (every basket emptied) is a valid log."""
    assert Transactions.parse_fimi(text).to_lists() == [[]] * baskets


@pytest.mark.parametrize(
    ("text", "line", "token"),
    [(b"1 2\n3 x4\n", 2, "x4"), (b"1\n2\n\n4,5\n", 4, "4,5"), (b"1 -3\n", 1, "-3")],
)
def test_bad_token_error_names_line_and_token(text, line, token):
    with pytest.raises(FedanonError) as err:
        Transactions.parse_fimi(text, source="log.dat")
    message = str(err.value)
    assert f"line {line}" in message and f"'{token}'" in message and "\n" not in message


def test_unreadable_file_is_a_user_error(tmp_path):
    with pytest.raises(FedanonError, match="cannot read"):
        Transactions.read_fimi(tmp_path / "missing.dat")


def test_containing_and_item_counts():
    tx = Transactions.from_lists([[1, 2, 3], [2, 3], [1, 3], [3]])
    assert tx.containing([2, 3]).tolist() == [0, 1]
    assert tx.containing(frozenset({1})).tolist() == [0, 2]
    assert tx.item_counts() == {1: 2, 2: 2, 3: 4}


def test_without_deletes_entries_but_keeps_transactions():
    tx = Transactions.from_lists([[1, 2], [3]])
    mask = np.array([False, True, True])
    out = tx.without(mask)
    assert out.to_lists() == [[1], []]
    assert len(out) == len(tx)


def test_from_lists_rejects_negative_ids():
    with pytest.raises(FedanonError):
        Transactions.from_lists([[1, -2]])


def test_item_id_too_long_for_int64_is_rejected():
    with pytest.raises(FedanonError, match="line 2: '1234567890123456789'"):
        Transactions.parse_fimi(b"1\n1234567890123456789\n")


def test_writer_handles_zero_wide_ids_and_empty_rows_at_both_ends():
    rows = [[], [0, 9, 10, 99, 100, 123456789012345678], [], [5], []]
    tx = Transactions.from_lists(rows)
    expected = "\n0 9 10 99 100 123456789012345678\n\n5\n\n"
    assert tx.to_fimi() == expected
    assert Transactions.parse_fimi(expected.encode()) == tx
    assert Transactions.from_lists([]).to_fimi() == ""
    assert Transactions.from_lists([[], []]).to_fimi() == "\n\n"
