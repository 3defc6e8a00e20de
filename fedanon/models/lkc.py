"""Independent brute-force verifier of LKC-privacy on a released table.

The anonymizing engine (`fedanon.algorithms.tds`) proves privacy incrementally: it only checks
groups of
exactly L attributes and only the groups a specialization touches. A bug there would silently
release an unsafe table, so this module re-checks the *released* table from scratch, sharing no
code with the engine:

* it reads nothing but the released cell values (generalized values are plain strings; two rows
  are in the same group of a QID subset iff their strings are equal on that subset);
* it enumerates *every* QID subset of size 1..min(L, |QID|), not only the largest ones, so it
  does not rely on the monotonicity argument the engine relies on;
* it compares against K and C with exact integer arithmetic (C is a `Fraction`), so a group of
  exactly K rows or a confidence of exactly C passes and nothing is decided by rounding.

A release repeats few distinct QID rows (a generalized Adult release at K = 20: about 500 of
45,222 rows), so the rows are first collapsed to their distinct QID combinations, each weighted
by its row count and by its count of each sensitive value; every group is a union of such
combinations, so group sizes and sensitive counts are weighted counts over them. The distinct
combinations keep the order in which they first occur, and so do the groups built from them,
which makes every tie-break ("the first group among equals") the same as over the rows.

Subsets are visited depth-first in lexicographic QID order. Each subset's combinations get dense
group ids by factorizing (parent subset's ids x new column's codes) as one int64 key, so every
subset costs one vectorized pass over the distinct combinations and keys never overflow (both
factors are < #rows). A release that passes (the usual case) is scanned a batch of subsets at a
time (`_scan_by_level`: one pass per batch instead of a dozen small ones per subset); any
violation sends the check through the subset-by-subset loop, which names the worst group.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fedanon.errors import FedanonError, MissingColumnError
from fedanon.shares import exact_share
from fedanon.tables import Table, arrow_of, column_names, keep_rows, numbers_of, strings_of


@dataclass(frozen=True)
class Violation:
    """One group that breaks LKC-privacy, with enough detail to find it in the release.

    `bound` is "K" (group too small) or "C" (a sensitive value too frequent in the group); for
    "C", `sensitive` names the value as (column, value) and `confidence` is its exact share.
    `first_row` is the 0-based position (in the table as given) of the group's first row.
    """

    bound: str
    qids: tuple[str, ...]
    values: tuple[str, ...]
    size: int
    first_row: int
    sensitive: tuple[str, str] | None = None
    sensitive_count: int | None = None

    @property
    def confidence(self) -> Fraction | None:
        """|T[qid ∧ s]| / |T[qid]| for a C violation, None for a K violation."""
        if self.sensitive_count is None:
            return None
        return Fraction(self.sensitive_count, self.size)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (see `CheckResult.to_dict`)."""
        confidence = self.confidence
        return {
            "bound": self.bound,
            "qids": list(self.qids),
            "values": list(self.values),
            "size": self.size,
            "first_row": self.first_row,
            "sensitive": None
            if self.sensitive is None
            else {"column": self.sensitive[0], "value": self.sensitive[1]},
            "sensitive_count": self.sensitive_count,
            "confidence": None if confidence is None else _fraction_dict(confidence),
        }


@dataclass
class CheckResult:
    """Outcome of `check_lkc`.

    `min_group_size` and `max_confidence` (keyed by (column, value) of each s in S) are taken
    over the groups of the subsets of exactly min(L, |QID|) attributes, the figures the engine
    reports; every smaller subset's group is a union of such groups, so these are also the
    extremes over all subsets. With `stop_at_first` they only cover the subsets checked before
    stopping (`stopped_early` tells).
    """

    ok: bool
    L: int
    K: int
    C: Fraction
    rows: int
    subsets_checked: int
    groups_checked: int
    violating_groups: int
    worst: Violation | None
    min_group_size: int | None
    max_confidence: dict[tuple[str, str], Fraction] = field(default_factory=dict)
    stopped_early: bool = False
    suppressed_rows: int = 0
    max_suppressed: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; fractions are kept exact as "p/q" strings next to a float."""
        return {
            "ok": self.ok,
            "L": self.L,
            "K": self.K,
            "C": _fraction_dict(self.C),
            "rows": self.rows,
            "subsets_checked": self.subsets_checked,
            "groups_checked": self.groups_checked,
            "violating_groups": self.violating_groups,
            "stopped_early": self.stopped_early,
            "suppressed_rows": self.suppressed_rows,
            "max_suppressed": self.max_suppressed,
            "min_group_size": self.min_group_size,
            "max_confidence": [
                {"column": col, "value": v, "confidence": _fraction_dict(share)}
                for (col, v), share in self.max_confidence.items()
            ],
            "worst": None if self.worst is None else self.worst.to_dict(),
        }


def _fraction_dict(x: Fraction) -> dict[str, Any]:
    """An exact fraction for machines that compare and a float for humans who plot."""
    return {"fraction": f"{x.numerator}/{x.denominator}", "value": float(x)}


def parse_confidence(value: Fraction | str | int) -> Fraction:
    """C as an exact fraction: "0.2", "1/5", "20%" or 1.

    Floats are refused because 0.2 as a binary float is not 1/5, which would move the exact
    boundary the checker promises to honour.
    """
    if isinstance(value, Fraction):
        c = value
    elif isinstance(value, bool) or not isinstance(value, str | int):
        raise FedanonError(f"C must be given exactly (a string like '0.2' or '1/5'), got {value!r}")
    else:
        try:
            c = exact_share(str(value).strip())
        except ValueError:
            raise FedanonError(f"C must be a number in (0, 1], got {value!r}") from None
    if not 0 < c <= 1:
        raise FedanonError(f"C must be in (0, 1], got {value}")
    return c


def _validate(
    df: Table, qids: Sequence[str], sensitive: Mapping[str, Sequence[str]], L: int, K: int
) -> None:
    """Reject inputs for which "LKC holds" would be meaningless or vacuous."""
    if isinstance(L, bool) or not isinstance(L, int | np.integer) or L < 1:
        raise FedanonError(f"L must be an integer >= 1, got {L!r}")
    if isinstance(K, bool) or not isinstance(K, int | np.integer) or K < 1:
        raise FedanonError(f"K must be an integer >= 1, got {K!r}")
    if not qids:
        raise FedanonError("no QID columns given")
    duplicates = sorted({q for q in qids if list(qids).count(q) > 1})
    if duplicates:
        raise FedanonError(f"QID column listed twice: {', '.join(duplicates)}")
    names = column_names(df)
    missing = [c for c in [*qids, *sensitive] if c not in names]
    if missing:
        raise MissingColumnError(f"column not in the table: {', '.join(dict.fromkeys(missing))}")
    if len(df) == 0:
        raise FedanonError("the table has no rows")


def _exact_argmax_ratio(num: np.ndarray, den: np.ndarray) -> int:
    """Index of the largest num/den (first one among equals), decided by exact integer products.

    The float quotient only proposes a candidate; the loop then climbs to any strictly larger
    ratio found by cross-multiplication, so the answer never depends on rounding.
    """
    best = int(np.argmax(num / den))
    while True:
        larger = np.flatnonzero(num * den[best] > num[best] * den)
        if larger.size == 0:
            break
        best = int(larger[np.argmax(num[larger] / den[larger])])
    return int(np.flatnonzero(num * den[best] == num[best] * den)[0])


def _worst_key(v: Violation, qid_pos: dict[str, int], s_pos: dict[tuple[str, str], int]) -> tuple:
    """Sort key of the worst-violation rule (smallest key is reported).

    K violations come first (an identifiable record is the more basic breach), smallest group
    first; C violations by highest confidence. Ties go to the subset with fewer attributes (the
    adversary needs less knowledge), then QID order, then sensitive-value order, then the row
    where the group first occurs.
    """
    subset = tuple(qid_pos[q] for q in v.qids)
    if v.bound == "K":
        return (0, v.size, len(subset), subset, 0, v.first_row)
    assert v.sensitive is not None and v.confidence is not None
    return (1, -v.confidence, len(subset), subset, s_pos[v.sensitive], v.first_row)


def _subsets(n_qids: int, depth: int) -> Iterator[tuple[int, ...]]:
    """QID index subsets of size 1..depth in depth-first lexicographic order (parent first)."""

    def extend(prefix: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        start = prefix[-1] + 1 if prefix else 0
        for j in range(start, n_qids):
            subset = (*prefix, j)
            yield subset
            if len(subset) < depth:
                yield from extend(subset)

    return extend(())


def _distinct_rows(
    codes: Sequence[np.ndarray], cards: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's distinct QID combination (dense ids in order of first occurrence) and each
    combination's first row."""
    combination = codes[0]
    for code, card in zip(codes[1:], cards[1:], strict=True):
        combination = _dense_ids(combination * card + code)
    # Ids in order of first occurrence: a row holds a new id exactly where the running maximum
    # grows.
    running = np.maximum.accumulate(combination)
    first = np.flatnonzero(np.r_[True, running[1:] > running[:-1]])
    return combination, first


def _dense_ids(key: np.ndarray) -> np.ndarray:
    """Dense int64 ids of `key`'s values in order of first occurrence (``pd.factorize``), by
    Arrow's hashing: the checker's own copy, not the engine's."""
    return numbers_of(pc.dictionary_encode(arrow_of(key)).indices).astype(np.int64)


def _cell(column: Any, row: int) -> str:
    """One cell's text (a violation names its group by these)."""
    if isinstance(column, pa.ChunkedArray | pa.Array):
        return str(column[row].as_py())
    return str(column.iat[row])


def _arrow_cell_text_codes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """`cell_text_codes` of an Arrow column: text, or a dictionary of text (a release's QID)."""
    if pa.types.is_dictionary(column.type) and column.null_count == 0:
        # a release's QID: its labels as text once, each row its label's code, renumbered
        # in order of first occurrence
        array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        label_codes, labels = cell_text_codes(array.dictionary)
        row_labels = label_codes[numbers_of(array.indices)]
        codes = _dense_ids(row_labels)
        label_of = np.zeros(codes.max(initial=-1) + 1, dtype=np.int64)
        label_of[codes] = row_labels  # every row of one id holds the same label
        return codes, labels[label_of]
    text = column if pa.types.is_string(column.type) else pc.cast(column, pa.string())
    if text.null_count:
        text = pc.fill_null(text, strings_of(["<NA>"])[0])
    encoded = pc.dictionary_encode(text)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    codes = numbers_of(encoded.indices).astype(np.int64)
    return codes, np.asarray(encoded.dictionary.to_pylist(), dtype=object)


def cell_text_codes(column: Any) -> tuple[np.ndarray, np.ndarray]:
    """The codes and distinct strings of ``pd.factorize(column.astype(str))`` (codes in order
    of first occurrence), each distinct value turned into text once rather than each cell.

    The checker's own copy of this step (not the engine's helpers), so a fault in the engine's
    encoding cannot hide itself here. Columns of strings (Python or Arrow, without missing
    cells) or categories are encoded directly; anything else (numbers, mixed objects, whose
    distinct values may print alike) cell by cell. An Arrow column (the CLI's release: text,
    and dictionary columns for the QIDs) is read as the text it holds, one hashing pass.
    """
    if isinstance(column, pa.ChunkedArray | pa.Array):
        return _arrow_cell_text_codes(column)
    import pandas as pd  # a Series: its caller has loaded pandas

    text_dtype = pd.api.types.is_string_dtype(column.dtype) and not pd.api.types.is_object_dtype(
        column.dtype
    )
    if text_dtype and not column.hasnans:  # Arrow or pandas strings: their own text
        codes, text = pd.factorize(column, use_na_sentinel=False)
        return codes.astype(np.int64), np.asarray(text, dtype=object)
    if not (
        pd.api.types.is_object_dtype(column.dtype) or isinstance(column.dtype, pd.CategoricalDtype)
    ):
        codes, text = pd.factorize(column.astype(str), use_na_sentinel=False)
        return codes.astype(np.int64), np.asarray(text, dtype=object)
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    labels: np.ndarray
    if isinstance(column.dtype, pd.CategoricalDtype):
        labels = np.array([str(u) for u in uniques], dtype=object)
    elif all(type(u) is str for u in uniques):
        labels = np.asarray(uniques, dtype=object)
    else:
        codes, text = pd.factorize(column.astype(str), use_na_sentinel=False)
        return codes.astype(np.int64), np.asarray(text, dtype=object)
    merged, distinct = pd.factorize(labels, use_na_sentinel=False)  # values that print alike
    return merged.astype(np.int64)[codes], np.asarray(distinct, dtype=object)


def _weighted_counts(ids: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per group, the sum of its combinations' integer weights (exact: float64 holds every count
    below 2^53, far above any table's row count)."""
    return np.rint(np.bincount(ids, weights=weights)).astype(np.int64)


@dataclass
class _LevelFigures:
    """What a clean scan of every subset yields (see `_scan_by_level`)."""

    subsets: int = 0
    groups: int = 0
    min_group_size: int | None = None
    max_confidence: dict[int, tuple[int, int]] = field(default_factory=dict)  # s -> (hits, size)


# Cells of one batch of subsets x distinct combinations (bounds the scan's memory).
_BATCH_CELLS = 1 << 22


def _scan_by_level(
    codes: Sequence[np.ndarray],
    cards: Sequence[int],
    weights: np.ndarray,
    s_weights: Sequence[np.ndarray],
    depth: int,
    K: int,
    c: Fraction,
) -> _LevelFigures | None:
    """Every QID subset of size 1..depth at once per size (a batch of subsets in one
    vectorized pass), or None as soon as any group breaks K or C.

    The subset-by-subset loop of `check_lkc` pays a dozen small array operations per subset
    (over a thousand subsets for 14 QIDs and L = 4); here a batch of subsets shares them. A
    row of the batch holds one subset's keys (its parent subset's group id x the new column's
    code) over the distinct combinations; offsetting each row makes one factorization give
    every subset its own groups, numbered in order of first occurrence like the loop's. A
    clean scan gives the loop's figures exactly; any violation sends the caller back to the
    loop, which finds and describes the worst one.
    """
    n_qids, m = len(codes), len(weights)
    code_matrix = np.vstack(codes)
    cards_arr = np.asarray(cards, dtype=np.int64)
    figures = _LevelFigures()
    parents: list[tuple[int, ...]] = [()]
    parent_ids = np.zeros((1, m), dtype=np.int64)  # the empty subset: one group
    parent_cards = np.ones(1, dtype=np.int64)
    for size in range(1, depth + 1):
        subsets = [(*p, j) for p in parents for j in range((p[-1] + 1) if p else 0, n_qids)]
        index_of = {p: i for i, p in enumerate(parents)}
        parent_of = np.array([index_of[s[:-1]] for s in subsets], dtype=np.int64)
        last = np.array([s[-1] for s in subsets], dtype=np.int64)
        keep = size < depth
        level_ids = np.empty((len(subsets), m), dtype=np.int64) if keep else None
        level_cards = np.empty(len(subsets), dtype=np.int64)
        batch = max(1, _BATCH_CELLS // max(1, m))
        for lo in range(0, len(subsets), batch):
            rows = slice(lo, min(lo + batch, len(subsets)))
            keys = (
                parent_ids[parent_of[rows]] * cards_arr[last[rows], None] + code_matrix[last[rows]]
            )
            span = parent_cards[parent_of[rows]] * cards_arr[last[rows]]  # keys < span per row
            offsets = np.concatenate(([0], np.cumsum(span)[:-1]))
            ids = _dense_ids((keys + offsets[:, None]).ravel()).reshape(keys.shape)
            ends = ids.max(axis=1) + 1  # each row's groups are one contiguous range of ids
            starts = np.concatenate(([0], ends[:-1]))
            counts = ends - starts
            flat_ids = ids.ravel()
            sizes = np.rint(np.bincount(flat_ids, weights=np.tile(weights, len(counts))))
            sizes = sizes.astype(np.int64)
            if sizes.min() < K:
                return None
            hits_all = []
            for s_weight in s_weights:
                hits = np.rint(np.bincount(flat_ids, weights=np.tile(s_weight, len(counts))))
                hits = hits.astype(np.int64)
                if np.any(hits * c.denominator > sizes * c.numerator):
                    return None
                hits_all.append(hits)
            figures.subsets += len(counts)
            figures.groups += int(counts.sum())
            if keep:
                assert level_ids is not None
                level_ids[rows] = ids - starts[:, None]
                level_cards[rows] = counts
            if size == depth:
                smallest = int(sizes.min())
                if figures.min_group_size is None or smallest < figures.min_group_size:
                    figures.min_group_size = smallest
                for i, hits in enumerate(hits_all):
                    top = _exact_argmax_ratio(hits, sizes)
                    pair = (int(hits[top]), int(sizes[top]))
                    held = figures.max_confidence.get(i)
                    if held is None or pair[0] * held[1] > held[0] * pair[1]:
                        figures.max_confidence[i] = pair
        if keep:
            assert level_ids is not None
            parents, parent_ids, parent_cards = subsets, level_ids, level_cards
    return figures


def check_lkc(
    df: Table,
    qids: Sequence[str],
    sensitive: Mapping[str, Sequence[str]],
    L: int,
    K: int,
    C: Fraction | str | int,
    *,
    stop_at_first: bool = False,
    suppressed: Mapping[str, str] | None = None,
    max_suppressed: int = 0,
) -> CheckResult:
    """Verify LKC-privacy of `df` by brute force over all QID subsets of size <= L.

    `sensitive` maps each sensitive column to its sensitive values S. A row matches s = (col, v)
    iff its `col` cell equals `v` (compared as strings). LKC holds iff for every subset Q with
    1 <= |Q| <= min(L, |QID|) and every group of rows equal on Q: size >= K and, for each s,
    count(s) / size <= C. With `stop_at_first`, checking ends after the first subset that has a
    violation (the worst within what was checked is reported). Input problems raise
    `FedanonError`.

    Record suppression: with `suppressed` (QID -> the label a suppressed cell holds, e.g. each
    taxonomy's root), the rows whose every QID cell holds that label form the *suppression
    group*. If it has at most `max_suppressed` rows, they are exempt from K and C and left out
    of every group, and the other rows must satisfy LKC-privacy on their own; if it has more,
    it is an ordinary group like any other (a fully generalized group of that size may be a
    legitimate release).
    """
    c = parse_confidence(C)
    _validate(df, qids, sensitive, L, K)
    exempt, given_rows = 0, len(df)
    positions = np.arange(len(df))  # rows checked, as positions in the table as given
    if suppressed is not None:
        missing = [q for q in qids if q not in suppressed]
        if missing:
            raise FedanonError(f"no suppressed label given for QID '{missing[0]}'")
        hit = np.ones(len(df), dtype=bool)
        for q in qids:
            q_codes, q_text = cell_text_codes(df[q])
            hit &= (q_text == str(suppressed[q]))[q_codes]
        if 0 < hit.sum() <= max_suppressed and not hit.all():
            exempt = int(hit.sum())
            df, positions = keep_rows(df, ~hit), np.flatnonzero(~hit)
    qids = list(qids)
    depth = min(int(L), len(qids))
    s_values = [(col, str(v)) for col, values in sensitive.items() for v in dict.fromkeys(values)]
    qid_pos = {q: i for i, q in enumerate(qids)}
    s_pos = {s: i for i, s in enumerate(s_values)}

    n = len(df)  # rows checked (the suppression group left out)
    # Counts are multiplied by C's terms and by other counts (exact ratio comparisons); use
    # Python ints only if such a product could overflow int64 (huge tables or C denominators).
    exact_dtype = np.int64 if n * max(n, c.numerator, c.denominator) < 2**62 else object
    read = dict.fromkeys([*qids, *(col for col, _ in s_values)])
    text_of = {col: cell_text_codes(df[col]) for col in read}
    row_codes = [text_of[q][0] for q in qids]
    cards = [len(text_of[q][1]) for q in qids]
    combination, first = _distinct_rows(row_codes, cards)
    codes = [col[first] for col in row_codes]  # per distinct combination
    weights = np.bincount(combination, minlength=len(first))
    s_weights = [
        np.bincount(combination[(text_of[col][1] == v)[text_of[col][0]]], minlength=len(first))
        for col, v in s_values
    ]

    result = CheckResult(
        ok=True,
        L=int(L),
        K=int(K),
        C=c,
        rows=given_rows,
        subsets_checked=0,
        groups_checked=0,
        violating_groups=0,
        worst=None,
        min_group_size=None,
        suppressed_rows=exempt,
        max_suppressed=int(max_suppressed),
    )
    if exact_dtype is np.int64:
        clean = _scan_by_level(codes, cards, weights, s_weights, depth, int(K), c)
        if clean is not None:
            result.subsets_checked, result.groups_checked = clean.subsets, clean.groups
            result.min_group_size = clean.min_group_size
            result.max_confidence = {
                s_values[i]: Fraction(*clean.max_confidence[i]) for i in range(len(s_values))
            }
            return result
    ids_at: dict[int, np.ndarray] = {}
    worst_key: tuple | None = None

    def consider(v: Violation) -> None:
        nonlocal worst_key
        key = _worst_key(v, qid_pos, s_pos)
        if worst_key is None or key < worst_key:
            result.worst, worst_key = v, key

    def describe(subset: tuple[int, ...], ids: np.ndarray, group: int) -> tuple[tuple, int]:
        row = int(first[np.argmax(ids == group)])  # the group's first row
        return tuple(_cell(df[qids[i]], row) for i in subset), int(positions[row])

    for subset in _subsets(len(qids), depth):
        last = subset[-1]
        if len(subset) == 1:
            key = codes[last]
        else:
            key = ids_at[len(subset) - 1] * cards[last] + codes[last]
        ids = _dense_ids(key)
        ids_at[len(subset)] = ids
        sizes = _weighted_counts(ids, weights)
        names = tuple(qids[i] for i in subset)
        result.subsets_checked += 1
        result.groups_checked += len(sizes)

        bad = sizes < K
        if bad.any():
            smallest = int(np.argmin(sizes))
            values, row = describe(subset, ids, smallest)
            consider(Violation("K", names, values, int(sizes[smallest]), row))
        at_depth = len(subset) == depth
        exact_sizes = sizes.astype(exact_dtype)
        for s, s_weight in zip(s_values, s_weights, strict=True):
            hits = _weighted_counts(ids, s_weight).astype(exact_dtype)
            over = np.asarray(hits * c.denominator > exact_sizes * c.numerator, dtype=bool)
            if not (at_depth or over.any()):
                continue
            top = _exact_argmax_ratio(hits, exact_sizes)
            top_hits, top_size = int(hits[top]), int(sizes[top])
            held = result.max_confidence.get(s)  # compared by integer cross-multiplication
            if at_depth and (
                held is None or top_hits * held.denominator > held.numerator * top_size
            ):
                result.max_confidence[s] = Fraction(top_hits, top_size)
            if over.any():
                bad |= over
                values, row = describe(subset, ids, top)
                consider(Violation("C", names, values, int(sizes[top]), row, s, int(hits[top])))
        if at_depth and (result.min_group_size is None or sizes.min() < result.min_group_size):
            result.min_group_size = int(sizes.min())
        result.violating_groups += int(bad.sum())
        if result.worst is not None and stop_at_first:
            break

    result.ok = result.worst is None
    result.stopped_early = result.subsets_checked < sum(
        comb(len(qids), size) for size in range(1, depth + 1)
    )
    return result
