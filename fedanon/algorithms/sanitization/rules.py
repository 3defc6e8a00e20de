"""Sensitive rules: the `X => Y` rules file and the rule type the algorithms take.

A rules file has one rule a line, `X => Y`, with the item ids of each side separated by commas
and/or blanks (`41,43 172 => 40`). Blank lines and lines starting with `#` are skipped. A line
that is not a rule is reported with its number; a file without any rule is an error too, since
"sanitize nothing" is almost certainly a mistake in a privacy tool.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fedanon.errors import FedanonError
from fedanon.utility.transactions import Transactions

_ITEM_SPLIT = re.compile(r"[,\s]+")


@dataclass(frozen=True)
class SensitiveRule:
    """A rule X => Y to hide; its itemset X u Y is what the algorithms break."""

    antecedent: frozenset[int]
    consequent: frozenset[int]

    def __post_init__(self) -> None:
        if not self.antecedent or not self.consequent:
            raise FedanonError(f"rule {self}: both sides need at least one item")
        if self.antecedent & self.consequent:
            raise FedanonError(f"rule {self}: an item is on both sides")

    @classmethod
    def of(cls, antecedent: Iterable[int], consequent: Iterable[int]) -> SensitiveRule:
        return cls(frozenset(antecedent), frozenset(consequent))

    @property
    def itemset(self) -> frozenset[int]:
        return self.antecedent | self.consequent

    @property
    def items(self) -> tuple[int, ...]:
        """The rule's items in ascending order (the order RRA takes turns in)."""
        return tuple(sorted(self.itemset))

    def __str__(self) -> str:
        left = ",".join(map(str, sorted(self.antecedent)))
        right = ",".join(map(str, sorted(self.consequent)))
        return f"{left} => {right}"


def parse_rules(text: str, source: str = "<rules>") -> list[SensitiveRule]:
    """Parse rules-file text; errors name the source and the line number."""
    rules: list[SensitiveRule] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        sides = stripped.split("=>")
        try:
            if len(sides) != 2:
                raise ValueError
            left, right = (_items(side) for side in sides)
            rules.append(SensitiveRule.of(left, right))
        except (ValueError, FedanonError):
            raise FedanonError(
                f"{source}: line {number}: expected 'X => Y' with item ids on both sides, "
                f"got '{stripped[:60]}'"
            ) from None
    if not rules:
        raise FedanonError(f"{source}: no sensitive rule in the file")
    return rules


def read_rules(path: str | os.PathLike[str]) -> list[SensitiveRule]:
    """Read a rules file (see the module docstring for the format)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise FedanonError(f"cannot read rules {path}: {exc}") from exc
    return parse_rules(text, source=str(path))


def format_rules(rules: Sequence[SensitiveRule]) -> str:
    """Rules-file text for `rules` (one `X => Y` a line)."""
    return "".join(f"{rule}\n" for rule in rules)


def require_items_present(rules: Sequence[SensitiveRule], tx: Transactions) -> None:
    """A rule naming an item the log never contains is a typo or the wrong file: say so."""
    present = set(tx.distinct_items().tolist())
    for number, rule in enumerate(rules, start=1):
        missing = sorted(rule.itemset - present)
        if missing:
            raise FedanonError(
                f"sensitive rule {number} ({rule}): item(s) {','.join(map(str, missing))} "
                "never occur in the transactions"
            )


def _items(side: str) -> list[int]:
    tokens = [token for token in _ITEM_SPLIT.split(side.strip()) if token]
    if not tokens or not all(token.isdigit() for token in tokens):
        raise ValueError
    return [int(token) for token in tokens]
