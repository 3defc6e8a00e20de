"""The shape of an LKC job: which columns are QIDs, which values are sensitive, the class column.

Shared by the centralized engine, the party daemon and the leader, so that every side derives
the same canonical layouts from the same object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from fedanon.errors import FedanonError
from fedanon.fingerprint import fingerprint
from fedanon.shares import parse_share
from fedanon.taxonomy.files import SensitiveValue
from fedanon.taxonomy.tree import Taxonomy


@dataclass
class LKCParams:
    """L, K, C of LKC-privacy; C is kept as an exact fraction so comparisons never round."""

    L: int
    K: int
    C: Fraction

    @classmethod
    def of(cls, L: int, K: int, C: float | str | Fraction) -> LKCParams:
        c = parse_confidence_bound(C)
        if L < 1:
            raise FedanonError(f"L must be at least 1 (got {L})")
        if K < 1:
            raise FedanonError(f"K must be at least 1 (got {K})")
        return cls(L=L, K=K, C=c)


def parse_confidence_bound(value: float | str | Fraction) -> Fraction:
    """C of LKC-privacy as an exact fraction in (0, 1]: ``0.2``, ``1/5`` or ``20%``.

    The one parser of C for every anonymizing command and config file, so each accepts the same
    forms. Anything else (``nan``, ``inf``, ``abc``, ``1/0``, out of range) is a one-line
    error. Floats (TOML numbers) are read through their shortest decimal text, so 0.2 is 1/5.
    """
    return parse_share(value, name="C", forms="a number like 0.2, 1/5 or 20%", bounds="(0, 1]")


@dataclass
class Schema:
    """QID taxonomies in schema order, the sensitive values and the class column (if any)."""

    taxonomies: list[Taxonomy]
    sensitive: list[SensitiveValue] = field(default_factory=list)
    class_column: str | None = None
    class_values: list[str] = field(default_factory=list)

    @property
    def qids(self) -> list[str]:
        return [t.attribute for t in self.taxonomies]

    def fingerprint_items(self) -> list[str]:
        """Canonical lines naming every schema and taxonomy item (for handshakes)."""
        items = [f"qids:{','.join(self.qids)}"]
        items.append("sensitive:" + ",".join(str(s) for s in self.sensitive))
        items.append(f"class:{self.class_column}:{','.join(self.class_values)}")
        for tax in self.taxonomies:
            items.extend(tax.fingerprint_items())
        return items

    def fingerprint(self) -> str:
        return fingerprint(self.fingerprint_items())
