"""QID columns as integer codes over explicit domains, and back.

Randomization only ever moves a value to another value of the same column's domain, so the
algorithm works on small integer codes (one int32 matrix, n x m) and the table is rebuilt from
the codes at the end. The domain of a column is explicit because in a federation it must be the
same at every party: a party's own values are not its domain, the agreed list is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError


@dataclass(frozen=True)
class CodedQIDs:
    """The QID columns of a table as codes: ``codes[r, i]`` indexes ``domains[i]``."""

    qids: tuple[str, ...]
    domains: tuple[tuple[str, ...], ...]
    codes: np.ndarray  # int32, n x m

    @property
    def sizes(self) -> np.ndarray:
        return np.array([len(d) for d in self.domains], dtype=np.int64)

    def histograms(self) -> list[np.ndarray]:
        """Per QID the count of each domain value (in domain order), as int64."""
        return [
            np.bincount(self.codes[:, i], minlength=len(d)).astype(np.int64)
            for i, d in enumerate(self.domains)
        ]


def check_qids(table: pd.DataFrame, qids: Sequence[str]) -> tuple[str, ...]:
    """Refuse an empty, repeated or unknown QID list (naming the column)."""
    if not qids:
        raise FedanonError("no QID columns given (--qid a,b,c)")
    if len(set(qids)) != len(qids):
        raise FedanonError("a QID column is listed twice")
    for column in qids:
        if column not in table.columns:
            raise FedanonError(f"the table has no QID column '{column}'")
    return tuple(qids)


def observed_domain(column: pd.Series) -> tuple[str, ...]:
    """The distinct values of a column as text, sorted (the centralized domain)."""
    return tuple(sorted(pd.unique(column.astype(str))))


def encode(
    table: pd.DataFrame, qids: Sequence[str], domains: Sequence[Sequence[str]] | None = None
) -> CodedQIDs:
    """Code the QID columns over `domains` (default: each column's observed values).

    A value outside its agreed domain is refused with the column and the number of such values
    (never the values themselves: in a federation the message goes to the leader).
    """
    qids = check_qids(table, qids)
    if domains is None:
        domains = [observed_domain(table[c]) for c in qids]
    if len(domains) != len(qids):
        raise FedanonError(f"{len(domains)} domains for {len(qids)} QID columns")
    codes = np.empty((len(table), len(qids)), dtype=np.int32)
    frozen = []
    for i, (column, domain) in enumerate(zip(qids, domains, strict=True)):
        domain = tuple(str(v) for v in domain)
        if len(set(domain)) != len(domain):
            raise FedanonError(f"column '{column}': the domain lists a value twice")
        coded = pd.Categorical(table[column].astype(str), categories=list(domain)).codes
        outside = int(np.count_nonzero(coded < 0))
        if outside:
            raise FedanonError(
                f"column '{column}': {outside} values outside the agreed domain "
                f"of {len(domain)} values"
            )
        codes[:, i] = coded
        frozen.append(domain)
    return CodedQIDs(qids, tuple(frozen), codes)


def decode(table: pd.DataFrame, coded: CodedQIDs, codes: np.ndarray) -> pd.DataFrame:
    """A copy of `table` whose QID columns hold the values `codes` index (same dtype as text).

    Every other column is the input column itself, untouched.
    """
    out = table.copy()
    for i, column in enumerate(coded.qids):
        values = np.asarray(coded.domains[i], dtype=object)[codes[:, i]]
        out[column] = pd.Series(values, index=table.index).astype(_text_dtype(table[column]))
    return out


def _text_dtype(column: pd.Series) -> object:
    """Keep Arrow-backed text as Arrow text (what read_table gives); otherwise plain str."""
    if isinstance(column.dtype, pd.ArrowDtype):
        return column.dtype if pd.api.types.is_string_dtype(column.dtype) else "string"
    return object
