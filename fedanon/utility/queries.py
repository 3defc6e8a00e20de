"""The count-query workload: random COUNT queries and their estimates on every kind of release.

A query is ``SELECT COUNT(*) WHERE pred(A1) AND .. AND pred(A_qd) AND pred(As)`` over qd QID
attributes drawn at random and the sensitive attribute As, with ``pred(A) = A IN (b values)``
drawn at random from the attribute's domain (its distinct values in the raw table) and
``b = ceil(|dom A| * s^(1/(qd+1)))``, so that the query's expected selectivity is about s. Queries
whose true count ``act`` is zero are redrawn (their relative error would be undefined). The
utility of a release is the average relative error ``|act - est| / act`` over the workload.

Three estimators answer the same workload, one per release shape (docs/alpha-k.md):

* a table queried directly (the raw table itself, or a randomized one): ``est`` = its count;
* a generalized table: every released value stands for the raw values it covers, uniformly, so a
  row contributes the product over the queried attributes of the fraction of its covered values
  that the predicate selects;
* a lossy-join pair (NSS with ungeneralized QIDs + ClassID, SS with ClassID + sensitive value):
  ``est = sum over classes X of (#NSS rows of X matching the QID predicates) x (#SS rows of X
  matching pred(As)) / |X|``.

Every estimator first collapses the table to its distinct rows with their multiplicities, so one
query costs a few vectorized passes over the distinct rows, not the records.
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError, MissingColumnError
from fedanon.taxonomy.tree import Taxonomy
from fedanon.text import as_text, lookup_codes

CLASS_COLUMN = "ClassID"
ANY_VALUE = "*"
_INTERVAL = re.compile(r"^\[\s*(-?[^-\s]+)\s*-\s*(-?[^\s\])]+)\s*([\])])$")
_MAX_DRAWS_PER_QUERY = 200


@dataclass(frozen=True)
class CountQuery:
    """One query: the queried QID attributes and, per attribute, the selected domain indices."""

    attributes: tuple[str, ...]
    value_indices: tuple[np.ndarray, ...]
    sensitive_indices: np.ndarray


def predicate_size(domain_size: int, qd: int, s: float) -> int:
    """b = ceil(|dom A| * s^(1/(qd+1))), at least 1 and at most |dom A|.

    The 1e-9 guards against a product that is a whole number in exact arithmetic landing just
    above it in floating point (which would add one value to the predicate).
    """
    b = math.ceil(domain_size * s ** (1.0 / (qd + 1)) - 1e-9)
    return max(1, min(domain_size, b))


@dataclass
class QueryWorkload:
    """A drawn workload with its true counts; build it with :meth:`generate`.

    `domains[A]` is the sorted array of A's distinct raw values as text; predicates are index
    arrays into it, which makes a predicate a boolean mask over the domain.
    """

    qids: tuple[str, ...]
    sensitive: str
    qd: int
    s: float
    seed: int
    domains: dict[str, np.ndarray]
    queries: list[CountQuery]
    actual: np.ndarray
    sizes: str = "fixed"

    # ------------------------------------------------------------------ drawing
    @classmethod
    def generate(
        cls,
        raw_df: pd.DataFrame,
        qids: Sequence[str],
        sensitive: str,
        qd: int = 4,
        s: float = 0.05,
        n_queries: int = 1000,
        seed: int | None = None,
        sizes: str = "fixed",
    ) -> QueryWorkload:
        """Draw `n_queries` queries with a non-zero true count on `raw_df`.

        Without a seed one is drawn from `secrets` and kept in the workload, so every run can be
        repeated. The qd attributes of each query are drawn uniformly without replacement from
        the QIDs and kept in QID order. ``sizes="fixed"`` selects b values per predicate (the
        selectivity s, as (alpha,k)'s workload does); ``sizes="random"`` selects a number drawn
        uniformly from 1..|dom A| per predicate, as Yang and Qiao's workload does ("a random
        number of categorical values from its domain"), and ignores s.
        """
        qids = tuple(qids)
        _validate_workload(raw_df, qids, sensitive, qd, s, n_queries)
        if sizes not in ("fixed", "random"):
            raise FedanonError(f"predicate sizes must be 'fixed' or 'random', got {sizes!r}")
        seed = secrets.randbits(63) if seed is None else int(seed)
        rng = np.random.default_rng(seed)
        columns = (*qids, sensitive)
        domains = {
            c: np.sort(pd.unique(as_text(raw_df[c]).to_numpy(dtype=object))) for c in columns
        }
        domains = {c: d.astype(str) for c, d in domains.items()}
        counter = _GroupedRows.from_table(raw_df, columns, domains)
        fixed = {c: predicate_size(len(domains[c]), qd, s) for c in columns}

        def size(column: str) -> int:
            if sizes == "fixed":
                return fixed[column]
            return int(rng.integers(1, len(domains[column]) + 1))

        queries: list[CountQuery] = []
        actual: list[int] = []
        draws = 0
        while len(queries) < n_queries:
            draws += 1
            if draws > _MAX_DRAWS_PER_QUERY * n_queries:
                raise FedanonError(
                    f"could draw only {len(queries)} of {n_queries} queries with a non-zero count "
                    f"in {draws - 1} draws (qd={qd}, s={s}): lower qd or raise s"
                )
            chosen = np.sort(rng.choice(len(qids), size=qd, replace=False))
            attrs = tuple(qids[i] for i in chosen)
            values = tuple(
                np.sort(rng.choice(len(domains[a]), size=size(a), replace=False)) for a in attrs
            )
            sens = np.sort(rng.choice(len(domains[sensitive]), size=size(sensitive), replace=False))
            query = CountQuery(attrs, values, sens)
            count = counter.count(query, domains, qids, sensitive)
            if count > 0:
                queries.append(query)
                actual.append(count)
        return cls(
            qids, sensitive, qd, s, seed, domains, queries, np.array(actual, dtype=np.int64), sizes
        )

    # ------------------------------------------------------------------ estimators
    def true_counts(self, raw_df: pd.DataFrame) -> np.ndarray:
        """The exact counts of the workload on `raw_df` (the `actual` of the table it came from)."""
        return self.estimate_direct(raw_df).astype(np.int64)

    def estimate_direct(self, df: pd.DataFrame) -> np.ndarray:
        """Counts on a table queried as it is (a randomized release, or the raw table)."""
        columns = (*self.qids, self.sensitive)
        _require(df, columns, "table")
        counter = _GroupedRows.from_table(df, columns, self.domains)
        return np.array(
            [counter.count(q, self.domains, self.qids, self.sensitive) for q in self.queries],
            dtype=float,
        )

    def estimate_generalized(
        self, release_df: pd.DataFrame, taxonomies: Mapping[str, Taxonomy] | None = None
    ) -> np.ndarray:
        """Estimates on a generalized table, uniform within each released value.

        A released QID value covers: itself when it is a raw domain value; the leaves below it
        when it is a node of the attribute's taxonomy (all nodes with that label, should an ARX
        tree repeat a label); the domain values inside it when it reads as an interval
        ``[lo-hi)`` / ``[lo-hi]``; the whole domain when it is ``*``. The sensitive column is
        released as it is and matched exactly.
        """
        taxonomies = taxonomies or {}
        _require(release_df, (*self.qids, self.sensitive), "release")
        label_codes: list[np.ndarray] = []
        covers: dict[str, np.ndarray] = {}
        for attr in self.qids:
            codes, labels = pd.factorize(as_text(release_df[attr]), sort=False)
            label_codes.append(codes)
            covers[attr] = np.stack(
                [
                    _label_cover(attr, str(label), self.domains[attr], taxonomies.get(attr))
                    for label in labels
                ]
            ).astype(float)
        sens_dom = self.domains[self.sensitive]
        sens_codes, _ = lookup_codes(release_df[self.sensitive], _index(sens_dom))
        sens_codes = np.where(sens_codes < 0, len(sens_dom), sens_codes)
        keys = np.column_stack([*label_codes, sens_codes])
        rows, weights = np.unique(keys, axis=0, return_counts=True)
        cover_sizes = {a: covers[a].sum(axis=1) for a in self.qids}
        position = {a: i for i, a in enumerate(self.qids)}
        estimates = np.empty(len(self.queries))
        for n, query in enumerate(self.queries):
            share = weights * _member(sens_dom, query.sensitive_indices)[rows[:, -1]]
            for attr, selected in zip(query.attributes, query.value_indices, strict=True):
                size = cover_sizes[attr]
                picked = covers[attr][:, selected].sum(axis=1)
                hit = np.divide(picked, size, out=np.zeros_like(picked), where=size > 0)
                share = share * hit[rows[:, position[attr]]]
            estimates[n] = share.sum()
        return estimates

    def estimate_lossy_join(
        self, nss_df: pd.DataFrame, ss_df: pd.DataFrame, class_column: str = CLASS_COLUMN
    ) -> np.ndarray:
        """Estimates on an NSS/SS pair joined per class (see the module docstring)."""
        _require(nss_df, (*self.qids, class_column), "NSS table")
        _require(ss_df, (class_column, self.sensitive), "SS table")
        classes, class_index = np.unique(
            np.concatenate(
                [
                    as_text(nss_df[class_column]).to_numpy(str),
                    as_text(ss_df[class_column]).to_numpy(str),
                ]
            ),
            return_inverse=True,
        )
        nss_class, ss_class = class_index[: len(nss_df)], class_index[len(nss_df) :]
        sizes = np.bincount(nss_class, minlength=len(classes))
        if not np.array_equal(sizes, np.bincount(ss_class, minlength=len(classes))):
            raise FedanonError(
                "NSS and SS tables disagree on the size of some class: they are not one release"
            )
        counter = _GroupedRows.from_table(
            nss_df, self.qids, self.domains, extra=nss_class.astype(np.int64)
        )
        sens_dom = self.domains[self.sensitive]
        sens_codes, _ = lookup_codes(ss_df[self.sensitive], _index(sens_dom))
        sens_codes = np.where(sens_codes < 0, len(sens_dom), sens_codes)
        per_class = np.zeros((len(classes), len(sens_dom) + 1))
        np.add.at(per_class, (ss_class, sens_codes), 1.0)
        estimates = np.empty(len(self.queries))
        for n, query in enumerate(self.queries):
            matched = counter.matching_weights(query, self.domains, self.qids)
            qid_hits = np.bincount(counter.extra, weights=matched, minlength=len(classes))
            sens_hits = per_class @ _member(sens_dom, query.sensitive_indices)
            estimates[n] = float(np.sum(qid_hits * sens_hits / sizes))
        return estimates

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready description of the workload (not the queries themselves)."""
        return {
            "qids": list(self.qids),
            "sensitive": self.sensitive,
            "qd": self.qd,
            "s": self.s,
            "seed": self.seed,
            "queries": len(self.queries),
            "predicate_sizes": (
                {c: predicate_size(len(d), self.qd, self.s) for c, d in self.domains.items()}
                if self.sizes == "fixed"
                else "random"
            ),
        }


def relative_error(actual: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """|act - est| / act per query (act > 0 by construction of the workload)."""
    actual = np.asarray(actual, dtype=float)
    if np.any(actual <= 0):
        raise ValueError("relative error needs positive actual counts")
    return np.abs(actual - np.asarray(estimate, dtype=float)) / actual


def average_relative_error(actual: np.ndarray, estimate: np.ndarray) -> float:
    """The paper's utility figure: the mean relative error over the workload."""
    return float(np.mean(relative_error(actual, estimate)))


# ---------------------------------------------------------------------- internals
@dataclass
class _GroupedRows:
    """A table collapsed to its distinct rows of domain indices (len(domain) = outside it)."""

    rows: np.ndarray
    weights: np.ndarray
    extra: np.ndarray

    @classmethod
    def from_table(
        cls,
        df: pd.DataFrame,
        columns: Sequence[str],
        domains: Mapping[str, np.ndarray],
        extra: np.ndarray | None = None,
    ) -> _GroupedRows:
        """Group by the columns' domain indices (and by `extra`, e.g. a class id, when given)."""
        codes = []
        for column in columns:
            domain = domains[column]
            mapped, _ = lookup_codes(df[column], _index(domain))
            codes.append(np.where(mapped < 0, len(domain), mapped))
        if extra is not None:
            codes.append(extra)
        rows, weights = np.unique(np.column_stack(codes), axis=0, return_counts=True)
        return cls(rows, weights, rows[:, len(columns)] if extra is not None else np.empty(0))

    def matching_weights(
        self, query: CountQuery, domains: Mapping[str, np.ndarray], qids: Sequence[str]
    ) -> np.ndarray:
        """Multiplicity of every distinct row that satisfies the query's QID predicates, else 0."""
        position = {a: i for i, a in enumerate(qids)}
        keep = np.ones(len(self.rows), dtype=bool)
        for attr, selected in zip(query.attributes, query.value_indices, strict=True):
            keep &= _member(domains[attr], selected)[self.rows[:, position[attr]]].astype(bool)
        return np.where(keep, self.weights, 0)

    def count(
        self,
        query: CountQuery,
        domains: Mapping[str, np.ndarray],
        qids: Sequence[str],
        sensitive: str,
    ) -> int:
        """Rows matching the whole query (the sensitive attribute is the column after the QIDs)."""
        matched = self.matching_weights(query, domains, qids)
        sens = _member(domains[sensitive], query.sensitive_indices)[self.rows[:, len(qids)]]
        return int(np.sum(matched * sens))


def _member(domain: np.ndarray, selected: np.ndarray) -> np.ndarray:
    """0/1 mask over the domain plus one trailing 0 for values outside the domain."""
    mask = np.zeros(len(domain) + 1)
    mask[selected] = 1.0
    return mask


def _index(domain: np.ndarray) -> dict[str, int]:
    return {str(v): i for i, v in enumerate(domain)}


def _label_cover(
    attribute: str, label: str, domain: np.ndarray, taxonomy: Taxonomy | None
) -> np.ndarray:
    """Boolean mask over `domain` (plus a trailing False) of the raw values `label` stands for."""
    cover = np.zeros(len(domain) + 1, dtype=bool)
    exact = np.flatnonzero(domain == label)
    if exact.size:
        cover[exact] = True
        return cover
    if taxonomy is not None:
        nodes = [n for n, text in enumerate(taxonomy.labels) if text == label]
        if nodes:
            atoms = taxonomy.encode(pd.Series(domain, dtype=object))
            for node in nodes:
                cover[:-1] |= (atoms >= taxonomy.atom_lo[node]) & (atoms < taxonomy.atom_hi[node])
            return cover
    if label == ANY_VALUE:
        cover[:-1] = True
        return cover
    match = _INTERVAL.match(label)
    if match:
        try:
            lo, hi = float(match.group(1)), float(match.group(2))
        except ValueError:
            match = None
        else:
            x = pd.to_numeric(pd.Series(domain, dtype=object), errors="coerce").to_numpy(float)
            upper = x <= hi if match.group(3) == "]" else x < hi
            cover[:-1] = (x >= lo) & upper
            return cover
    raise FedanonError(
        f"column '{attribute}': released value '{label}' is neither a raw value, a node of its "
        "taxonomy, an interval [lo-hi) nor '*'"
    )


def _require(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise MissingColumnError(f"{what} has no column '{missing[0]}'")


def _validate_workload(
    raw_df: pd.DataFrame, qids: tuple[str, ...], sensitive: str, qd: int, s: float, n: int
) -> None:
    """Reject workloads that cannot be drawn, with the reason in one line."""
    if not qids:
        raise FedanonError("no QID columns given for the query workload")
    if sensitive in qids:
        raise FedanonError(f"sensitive column '{sensitive}' is also a QID")
    _require(raw_df, (*qids, sensitive), "raw table")
    if len(raw_df) == 0:
        raise FedanonError("the raw table has no rows")
    if isinstance(qd, bool) or not isinstance(qd, int | np.integer) or not 1 <= qd <= len(qids):
        raise FedanonError(f"qd must be an integer in 1..{len(qids)} (the QID count), got {qd!r}")
    if not 0 < s <= 1:
        raise FedanonError(f"s (query selectivity) must be in (0, 1], got {s}")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise FedanonError(f"the number of queries must be an integer >= 1, got {n!r}")
