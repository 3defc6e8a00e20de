"""The shape of an LKC job: which columns are QIDs, which values are sensitive, the class column.

Shared by the centralized engine, the party daemon and the leader, so that every side derives
the same canonical layouts from the same object.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from fractions import Fraction

from fedanon.errors import FedanonError
from fedanon.taxonomy.tree import Taxonomy


@dataclass(frozen=True)
class SensitiveValue:
    """One value s of S: a (column, value) pair."""

    column: str
    value: str

    def __str__(self) -> str:
        return f"{self.column}={self.value}"


@dataclass
class LKCParams:
    """L, K, C of LKC-privacy; C is kept as an exact fraction so comparisons never round."""

    L: int
    K: int
    C: Fraction

    @classmethod
    def of(cls, L: int, K: int, C: float | str | Fraction) -> LKCParams:
        c = Fraction(str(C)) if not isinstance(C, Fraction) else C
        if L < 1:
            raise FedanonError(f"L must be at least 1 (got {L})")
        if K < 1:
            raise FedanonError(f"K must be at least 1 (got {K})")
        if not 0 < c <= 1:
            raise FedanonError(f"C must be in (0, 1] (got {C})")
        return cls(L=L, K=K, C=c)


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
        digest = hashlib.sha256("\n".join(self.fingerprint_items()).encode()).hexdigest()
        return digest
