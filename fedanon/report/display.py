"""How report figures read for people: percentages, counts, seconds (HTML and terminal share it)."""

from __future__ import annotations

from typing import Any


def percent(share: float) -> str:
    """0.18532 -> '18.53 %'."""
    return f"{100 * share:.2f} %"


def count(n: int) -> str:
    """30162 -> '30,162'."""
    return f"{n:,}"


def seconds(x: float) -> str:
    """1.23456 -> '1.23 s'; long runs in minutes and seconds."""
    if x >= 60:
        minutes, rest = divmod(x, 60)
        return f"{int(minutes)} min {rest:.0f} s"
    return f"{x:.2f} s"


def plain(value: Any) -> str:
    """Any summary value as plain words: no dict or list brackets, floats shortened."""
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "none"}[value]
    if isinstance(value, int):
        return count(value)
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {plain(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(plain(v) for v in value)
    return str(value)
