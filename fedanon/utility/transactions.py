"""Transaction logs (market baskets, prescriptions, web sessions) in a compact CSR layout.

A log of N transactions is two numpy arrays: `items` holds every transaction's item ids one
after the other, and transaction t is `items[indptr[t]:indptr[t + 1]]`. That keeps a
million-transaction log in a few tens of megabytes and lets counting and subset tests run as
array operations instead of loops over Python sets. Each row is stored sorted and without
duplicate items, so two logs with the same baskets compare equal.

The file format is FIMI's: one transaction a line, item ids as non-negative decimal integers
separated by blanks; an empty line is an empty transaction (a basket that lost all its items
stays a line, so the transaction count is preserved).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

from fedanon.atomic import atomic_path
from fedanon.errors import FedanonError

ITEM_DTYPE = np.int64
_NEWLINE = ord("\n")
# One table lookup classifies every byte of a file: other, digit, blank or newline.
_OTHER_CLASS, _DIGIT_CLASS, _BLANK_CLASS, _NEWLINE_CLASS = range(4)
_BYTE_CLASS = np.full(256, _OTHER_CLASS, dtype=np.uint8)
_BYTE_CLASS[ord("0") : ord("9") + 1] = _DIGIT_CLASS
_BYTE_CLASS[list(b" \t\r\v\f")] = _BLANK_CLASS
_BYTE_CLASS[_NEWLINE] = _NEWLINE_CLASS
_MAX_DIGITS = 18  # every 18-digit id fits in int64
_POWERS_OF_TEN = 10 ** np.arange(1, _MAX_DIGITS + 1, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Transactions:
    """A transaction log: row t is `items[indptr[t]:indptr[t + 1]]`, sorted, no duplicates."""

    indptr: np.ndarray
    items: np.ndarray

    def __post_init__(self) -> None:
        if self.indptr.ndim != 1 or len(self.indptr) == 0 or self.indptr[0] != 0:
            raise ValueError("indptr must be 1-D and start at 0")
        if self.indptr[-1] != len(self.items):
            raise ValueError("indptr must end at len(items)")

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_lists(cls, rows: Iterable[Iterable[int]]) -> Transactions:
        """Build a log from Python iterables of item ids (tests, small examples)."""
        materialized = [list(row) for row in rows]
        lengths = np.fromiter((len(row) for row in materialized), dtype=np.int64)
        flat = np.fromiter(
            (item for row in materialized for item in row), dtype=ITEM_DTYPE, count=lengths.sum()
        )
        if (flat < 0).any():
            raise FedanonError("item ids must be non-negative integers")
        return cls.from_csr(_indptr(lengths), flat)

    @classmethod
    def from_csr(cls, indptr: np.ndarray, items: np.ndarray) -> Transactions:
        """Build a log from raw CSR arrays, sorting each row and dropping repeated items."""
        indptr = np.asarray(indptr, dtype=np.int64)
        items = np.asarray(items, dtype=ITEM_DTYPE)
        rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        increasing = (items[1:] > items[:-1]) | (rows[1:] != rows[:-1])
        if increasing.all():  # FIMI files are usually sorted already: skip the sort
            return cls(indptr, items)
        order = np.lexsort((items, rows))
        rows, items = rows[order], items[order]
        keep = np.ones(len(items), dtype=bool)
        keep[1:] = (rows[1:] != rows[:-1]) | (items[1:] != items[:-1])
        lengths = np.bincount(rows[keep], minlength=len(indptr) - 1)
        return cls(_indptr(lengths), items[keep])

    # -- FIMI files ---------------------------------------------------------------------------

    @classmethod
    def read_fimi(cls, path: str | os.PathLike[str]) -> Transactions:
        """Read a FIMI file; a bad token ends in one error naming its line and the token."""
        path = Path(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise FedanonError(f"cannot read transactions {path}: {exc.strerror}") from exc
        # a UTF-8 byte-order mark (files saved by Windows editors) is not an item
        return cls.parse_fimi(raw.removeprefix(b"\xef\xbb\xbf"), source=str(path))

    @classmethod
    def parse_fimi(cls, raw: bytes, source: str = "<transactions>") -> Transactions:
        """Parse FIMI text with array operations: validate bytes, find tokens and their lines."""
        byte_class = _BYTE_CLASS[np.frombuffer(raw, dtype=np.uint8)]
        newline = byte_class == _NEWLINE_CLASS
        digit = byte_class == _DIGIT_CLASS
        separator = newline | (byte_class == _BLANK_CLASS)
        starts = np.flatnonzero(digit & np.concatenate(([True], separator[:-1])))
        ends = np.flatnonzero(digit & np.concatenate((separator[1:], [True])))
        if not (digit | separator).all() or (ends - starts >= _MAX_DIGITS).any():
            line, token = _first_bad_token(raw)
            raise FedanonError(
                f"{source}: line {line}: '{token}' is not an item id "
                "(expected non-negative integers separated by spaces)"
            )
        line_ends = np.flatnonzero(newline)
        n_lines = len(line_ends) + (1 if len(raw) and raw[-1:] != b"\n" else 0)
        lengths = np.bincount(np.searchsorted(line_ends, starts), minlength=n_lines)
        # Only digits and blanks are left, so numpy's C text parser reads every token (it
        # refuses a text without any, so a log of empty transactions skips it).
        items = (
            np.fromstring(raw.decode("ascii"), dtype=ITEM_DTYPE, sep=" ")
            if len(starts)
            else np.empty(0, dtype=ITEM_DTYPE)
        )
        if len(items) != len(starts):  # pragma: no cover - guarded by the byte check above
            raise FedanonError(f"{source}: unreadable transactions")
        return cls.from_csr(_indptr(lengths), items)

    def write_fimi(self, path: str | os.PathLike[str]) -> None:
        """Write the log as FIMI text, atomically (no partial file on failure)."""
        with atomic_path(path) as tmp:
            tmp.write_bytes(self.to_fimi_bytes())

    def to_fimi(self) -> str:
        """The log as FIMI text, one line per transaction (empty transactions as empty lines)."""
        return self.to_fimi_bytes().decode("ascii")

    def to_fimi_bytes(self) -> bytes:
        """FIMI text built digit by digit in one byte array (no Python string per item)."""
        items, lengths = self.items, self.lengths()
        width = 1 + np.searchsorted(_POWERS_OF_TEN, items, side="right")
        row_bytes = np.bincount(self.row_ids(), weights=width + 1, minlength=len(self))
        row_bytes = row_bytes.astype(np.int64) + (lengths == 0)
        row_start = np.concatenate(([0], np.cumsum(row_bytes)))
        before = np.cumsum(width + 1) - (width + 1)
        rows = self.row_ids()
        item_start = row_start[rows] + before - before[self.indptr[rows]]
        out = np.full(int(row_start[-1]), ord(" "), dtype=np.uint8)
        out[row_start[:-1][lengths == 0]] = _NEWLINE
        last_items = self.indptr[1:][lengths > 0] - 1
        out[item_start[last_items] + width[last_items]] = _NEWLINE
        remaining = items.copy()
        for place in range(int(width.max(initial=0))):
            has_digit = width > place
            out[(item_start + width - 1 - place)[has_digit]] = ord("0") + remaining[has_digit] % 10
            remaining //= 10
        return out.tobytes()

    # -- access -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.indptr) - 1

    def __iter__(self) -> Iterator[np.ndarray]:
        for start, stop in pairwise(self.indptr.tolist()):
            yield self.items[start:stop]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Transactions):
            return NotImplemented
        return np.array_equal(self.indptr, other.indptr) and np.array_equal(self.items, other.items)

    __hash__ = None  # type: ignore[assignment]

    def row(self, t: int) -> np.ndarray:
        """The sorted item ids of transaction t."""
        return self.items[self.indptr[t] : self.indptr[t + 1]]

    def lengths(self) -> np.ndarray:
        """Number of items of each transaction."""
        return np.diff(self.indptr)

    def row_ids(self) -> np.ndarray:
        """For every entry of `items`, the transaction it belongs to."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.lengths())

    def to_lists(self) -> list[list[int]]:
        """Every transaction as a list of ints (tests, small logs, miners that want lists)."""
        flat = self.items.tolist()
        bounds = self.indptr.tolist()
        return [flat[a:b] for a, b in pairwise(bounds)]

    def item_counts(self) -> dict[int, int]:
        """Support (number of transactions) of every item present in the log."""
        values, counts = np.unique(self.items, return_counts=True)
        return dict(zip(values.tolist(), counts.tolist(), strict=True))

    def distinct_items(self) -> np.ndarray:
        """The sorted ids of the items that occur in the log."""
        return np.unique(self.items)

    def containing(self, itemset: Sequence[int] | frozenset[int]) -> np.ndarray:
        """Sorted ids of the transactions that contain every item of `itemset`."""
        wanted = np.fromiter(itemset, dtype=ITEM_DTYPE)
        if len(wanted) == 0:
            return np.arange(len(self), dtype=np.int64)
        hits = np.isin(self.items, wanted)
        per_row = np.bincount(self.row_ids()[hits], minlength=len(self))
        return np.flatnonzero(per_row == len(np.unique(wanted)))

    def without(self, deletions: np.ndarray) -> Transactions:
        """A copy with the entries flagged in the boolean mask `deletions` removed."""
        keep = ~np.asarray(deletions, dtype=bool)
        lengths = np.bincount(self.row_ids()[keep], minlength=len(self))
        return Transactions(_indptr(lengths), self.items[keep])


def _indptr(lengths: np.ndarray) -> np.ndarray:
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    return indptr


def _first_bad_token(raw: bytes) -> tuple[int, str]:
    """Slow path, only after the fast parse failed: locate the first token that is no item id."""
    for number, line in enumerate(raw.split(b"\n"), start=1):
        for token in line.split():
            if not token.isdigit() or len(token) > _MAX_DIGITS:
                return number, token.decode("utf-8", errors="replace")[:40]
    return 0, "?"  # pragma: no cover - only called after a non-digit byte was seen
