"""The rules file: format, comments, and one-line errors with the line number."""

from __future__ import annotations

import pytest

from fedanon.algorithms.sanitization.rules import (
    SensitiveRule,
    format_rules,
    parse_rules,
    read_rules,
    require_items_present,
)
from fedanon.errors import FedanonError
from fedanon.utility.transactions import Transactions


def test_parse_commas_blanks_and_comments():
    text = "# scenario S3\n41,43 172 => 40\n\n 7=>8 \n"
    assert parse_rules(text) == [SensitiveRule.of([41, 43, 172], [40]), SensitiveRule.of([7], [8])]


def test_format_round_trips():
    rules = [SensitiveRule.of([3, 1], [2]), SensitiveRule.of([5], [4, 6])]
    assert format_rules(rules) == "1,3 => 2\n5 => 4,6\n"
    assert parse_rules(format_rules(rules)) == rules


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("1 => 2\n3 -> 4\n", 2),
        ("1 => 2\n\n=> 4\n", 3),
        ("1 => x\n", 1),
        ("1 => 2 => 3\n", 1),
        ("1,2 => 2\n", 1),
    ],
)
def test_bad_line_is_named(text, line):
    with pytest.raises(FedanonError, match=f"rules.txt: line {line}: "):
        parse_rules(text, source="rules.txt")


def test_empty_file_is_an_error(tmp_path):
    path = tmp_path / "rules.txt"
    path.write_text("# nothing\n\n")
    with pytest.raises(FedanonError, match="no sensitive rule"):
        read_rules(path)


def test_rule_items_absent_from_the_log_are_named():
    tx = Transactions.from_lists([[1, 2], [2, 3]])
    with pytest.raises(FedanonError, match=r"rule 2 \(1,9 => 8\).*8,9"):
        require_items_present([SensitiveRule.of([1], [2]), SensitiveRule.of([1, 9], [8])], tx)
