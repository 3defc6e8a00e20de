"""Independent k-anonymity checker: every combination of QID values occurs at least k times.

It reads a release as plain cell text and shares no code with any anonymization algorithm, so
a bug in an algorithm cannot hide itself here. A suppressed value (``?`` or any other marker) is
a value like any other: two rows form one group exactly when their QID cells are equal strings.
Missing cells (NA) are compared as the empty string, as they would be written to a CSV file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from fedanon.errors import FedanonError, MissingColumnError


@dataclass(frozen=True)
class KAnonymityResult:
    """Outcome of a check; ``smallest`` lists the QID values of the smallest group."""

    ok: bool
    k: int
    rows: int
    groups: int
    min_group_size: int | None
    violating_groups: int
    violating_rows: int
    smallest: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "k": self.k,
            "rows": self.rows,
            "groups": self.groups,
            "min_group_size": self.min_group_size,
            "violating_groups": self.violating_groups,
            "violating_rows": self.violating_rows,
            "smallest_group": self.smallest,
        }


def check_k_anonymity(df: pd.DataFrame, qids: Sequence[str], k: int) -> KAnonymityResult:
    """Group the rows by their QID cell strings and compare every group size with `k`.

    An empty table is trivially k-anonymous (no record can be re-identified).
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise FedanonError(f"k must be an integer >= 1, got {k!r}")
    names = list(qids)
    if not names:
        raise FedanonError("no QID columns to check")
    if len(set(names)) != len(names):
        raise FedanonError("a QID column is listed twice")
    missing = [q for q in names if q not in df.columns]
    if missing:
        raise MissingColumnError(f"the release has no QID column '{missing[0]}'")
    if len(df) == 0:
        return KAnonymityResult(True, k, 0, 0, None, 0, 0)
    text = pd.DataFrame(
        {q: df[q].astype(object).where(df[q].notna(), "").astype(str) for q in names}
    )
    sizes = text.groupby(names, sort=False, dropna=False).size()
    small = sizes[sizes < k]
    smallest_key = sizes.idxmin()
    key = smallest_key if isinstance(smallest_key, tuple) else (smallest_key,)
    return KAnonymityResult(
        ok=small.empty,
        k=k,
        rows=len(df),
        groups=len(sizes),
        min_group_size=int(sizes.min()),
        violating_groups=len(small),
        violating_rows=int(small.sum()),
        smallest=dict(zip(names, (str(v) for v in key), strict=True)),
    )
