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
import pyarrow as pa

from fedanon.errors import FedanonError, MissingColumnError


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
            raise MissingColumnError(f"the table has no QID column '{column}'")
    return tuple(qids)


def _distinct(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Codes into the column's distinct values, and those values as text.

    Factorizing first (vectorized, Arrow-aware) and turning only the few distinct values into
    text is what keeps a million-row column fast; missing values become the text ``nan``.
    """
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    return codes, [str(u) for u in uniques]


def observed_domain(column: pd.Series) -> tuple[str, ...]:
    """The distinct values of a column as text, sorted (the centralized domain)."""
    return tuple(sorted(set(_distinct(column)[1])))


def encode(
    table: pd.DataFrame, qids: Sequence[str], domains: Sequence[Sequence[str]] | None = None
) -> CodedQIDs:
    """Code the QID columns over `domains` (default: each column's observed values).

    A value outside its agreed domain is refused with the column and the number of such values
    (never the values themselves: in a federation the message goes to the leader).
    """
    qids = check_qids(table, qids)
    if domains is not None and len(domains) != len(qids):
        raise FedanonError(f"{len(domains)} domains for {len(qids)} QID columns")
    codes = np.empty((len(table), len(qids)), dtype=np.int32)
    frozen = []
    for i, column in enumerate(qids):
        local, labels = _distinct(table[column])
        domain = (
            tuple(str(v) for v in domains[i]) if domains is not None else tuple(sorted(set(labels)))
        )
        index = {v: j for j, v in enumerate(domain)}
        if len(index) != len(domain):
            raise FedanonError(f"column '{column}': the domain lists a value twice")
        coded = np.array([index.get(v, -1) for v in labels], dtype=np.int32)[local]
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
    """A copy of `table` whose QID columns hold the values `codes` index, as text.

    Arrow-backed text (what read_table gives) stays Arrow text, built by one Arrow `take`;
    any other column becomes plain text. Every other column is the input column, untouched.
    """
    out = table.copy()
    for i, column in enumerate(coded.qids):
        if isinstance(table[column].dtype, pd.ArrowDtype):
            values = pa.array(coded.domains[i], type=pa.string()).take(pa.array(codes[:, i]))
            out[column] = pd.Series(pd.arrays.ArrowExtensionArray(values), index=table.index)
        else:
            values = np.asarray(coded.domains[i], dtype=object)[codes[:, i]]
            out[column] = pd.Series(values, index=table.index, dtype=object)
    return out
