"""Shares written as ``0.2``, ``1/5`` or ``20%``: the one parser behind every option and key that
takes one (LKC's C, the record-suppression budget, the checker's C, configuration proportions).

A share comes out as an exact `Fraction`, so a comparison against a boundary (C, a budget of
records) never rounds; floats (TOML numbers) are read through their shortest decimal text, so
0.2 is 1/5.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from fedanon.errors import FedanonError

#: The two ranges a share may be confined to: a bound (C) or a budget that must leave records.
Bounds = Literal["(0, 1]", "[0, 1)"]


def exact_share(text: str) -> Fraction:
    """``0.2``, ``1/5`` or ``20%`` as an exact fraction, unchecked against any range.

    Raises ValueError for anything else (``abc``, ``1/0``, ``nan``, ``inf``), so each caller
    words its own error.
    """
    scale = Fraction(1, 100) if text.endswith("%") else Fraction(1)
    try:
        return Fraction(text.removesuffix("%").strip()) * scale
    except ZeroDivisionError:
        raise ValueError(f"{text!r} divides by zero") from None


def parse_share(
    value: float | str | Fraction, *, name: str, forms: str, bounds: Bounds
) -> Fraction:
    """`value` (a Fraction, a number or its text) as an exact share within `bounds`.

    Anything else is a one-line `FedanonError` naming `name` and the accepted `forms`.
    """
    if isinstance(value, Fraction):
        share = value
    elif isinstance(value, bool) or not isinstance(value, str | int | float):
        raise FedanonError(f"{name} must be {forms}, got {value!r}")
    else:
        text = str(value).strip()
        try:
            share = exact_share(text)
        except ValueError:
            raise FedanonError(f"{name} must be {forms}, got {text!r}") from None
        value = text  # what the range error shows: the text without its surrounding blanks
    inside = 0 < share <= 1 if bounds == "(0, 1]" else 0 <= share < 1
    if not inside:
        raise FedanonError(f"{name} must be in {bounds}, got {value}")
    return share
