"""One share parser (fedanon/shares.py) behind LKC's C and the record-suppression budget.

Both options accept the same forms and refuse the same inputs with a one-line error naming the
option; only their ranges differ: C in (0, 1], the budget in [0, 1).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from fedanon.algorithms.tds.suppression import parse_suppression_share
from fedanon.configschema import Proportion
from fedanon.errors import FedanonError
from fedanon.models.lkc import parse_confidence
from fedanon.schema import parse_confidence_bound
from fedanon.shares import exact_share, parse_share

FORMS = [
    ("0.2", Fraction(1, 5)),
    ("1/5", Fraction(1, 5)),
    ("20%", Fraction(1, 5)),
    (" 20 % ", Fraction(1, 5)),
    (0.2, Fraction(1, 5)),  # a float through its shortest decimal text, not its binary value
    (Fraction(1, 5), Fraction(1, 5)),
    ("0.025", Fraction(1, 40)),
    ("2.5%", Fraction(1, 40)),
]

BAD = ["abc", "", "%", "1/0", "0/0", "nan", "inf", "-inf", "0.2\n0.3", "1/5/2", "0x10", "two"]


@pytest.mark.parametrize(("value", "expected"), FORMS)
def test_c_and_the_budget_read_the_same_forms(value: object, expected: Fraction) -> None:
    assert parse_confidence_bound(value) == expected  # type: ignore[arg-type]
    assert parse_suppression_share(value) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("text", BAD)
def test_unreadable_text_is_one_line_naming_the_option(text: str) -> None:
    with pytest.raises(FedanonError) as c_error:
        parse_confidence_bound(text)
    with pytest.raises(FedanonError) as budget_error:
        parse_suppression_share(text)
    assert str(c_error.value) == f"C must be a number like 0.2, 1/5 or 20%, got {text.strip()!r}"
    assert str(budget_error.value) == (
        f"--suppress must be a share like 0.02 or 2%, got {text.strip()!r}"
    )
    for error in (c_error, budget_error):
        assert "\n" not in str(error.value)
    with pytest.raises(ValueError):
        exact_share(text.strip())


@pytest.mark.parametrize("value", [True, None, [0.2], b"0.2", {"C": 0.2}])
def test_a_value_of_another_type_is_refused(value: object) -> None:
    with pytest.raises(FedanonError, match=r"^C must be a number like 0.2, 1/5 or 20%, got "):
        parse_confidence_bound(value)  # type: ignore[arg-type]
    if value is not None:  # None is "no budget" for --suppress
        with pytest.raises(FedanonError, match=r"^--suppress must be a share like 0.02 or 2%"):
            parse_suppression_share(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "c_ok", "budget_ok"),
    [("0", False, True), ("1", True, False), ("100%", True, False), ("0%", False, True)],
)
def test_only_the_ranges_differ(value: str, c_ok: bool, budget_ok: bool) -> None:
    for parse, ok in ((parse_confidence_bound, c_ok), (parse_suppression_share, budget_ok)):
        if ok:
            assert parse(value) == exact_share(value)
        else:
            with pytest.raises(FedanonError, match=r" must be in (\(0, 1\]|\[0, 1\)), got "):
                parse(value)


@pytest.mark.parametrize("value", ["\n2\n", " 1.5 ", "\t-0.1\r\n", "150%\n"])
def test_an_out_of_range_share_is_one_line(value: str) -> None:
    """The range error shows the text without its surrounding blanks (a newline around a TOML
    string or an option value once broke the message in two)."""
    for parse in (parse_confidence_bound, parse_suppression_share):
        with pytest.raises(FedanonError) as error:
            parse(value)
        assert "\n" not in str(error.value) and str(error.value).endswith(f"got {value.strip()}")


def test_the_checker_and_the_config_files_read_the_same_text() -> None:
    """The independent checker (floats refused) and configuration proportions parse text with
    the same function, so a form one accepts the others accept too."""
    for text, expected in FORMS:
        if isinstance(text, str):
            assert parse_confidence(text) == expected
            assert Proportion().check(text, "job.C", "job.toml") == expected
    with pytest.raises(FedanonError, match="C must be a number in"):
        parse_confidence("1/0")


def test_parse_share_names_what_it_parses() -> None:
    with pytest.raises(FedanonError, match=r"^alpha must be a share, got 'x'$"):
        parse_share("x", name="alpha", forms="a share", bounds="(0, 1]")
    assert parse_share(" 1/2 ", name="alpha", forms="a share", bounds="[0, 1)") == Fraction(1, 2)
