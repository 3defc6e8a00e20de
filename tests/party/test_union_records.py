"""The party's union input read batch by batch: the same records, one owner batch, bounded memory.

A counting engine hands the release as batches of distinct rows and a code per record (a Dask
party: one batch per shard). The records must be the table's rows serialized in row order
however the rows are cut; the daemon must hold one batch at a time and seal a bounded piece
at a time; and the sealed batch must still be one owner batch (one ephemeral key per party hop
for all of it, as docs/leakage.md states) that opens to the records and the dummies.
"""

from __future__ import annotations

import gc
import itertools
import weakref
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

import fedanon.crypto.onion_union as onion_union
import fedanon.party.union as union
from fedanon.algorithms.tds.engines.records import ReleasedRows, released_rows
from fedanon.crypto.onion_union import UnionContext, open_records, peel_layer
from fedanon.crypto.parallel import SEQUENTIAL
from fedanon.party.records import LocalRecords, encode_record
from fedanon.party.union import UnionRole, measured_size, record_bytes
from fedanon.protos import fedanon_v1_pb2 as pb


def _table() -> pd.DataFrame:
    """Text, numbers, missing values, Arrow text with and without nulls, a categorical."""
    return pd.DataFrame(
        {
            "a": ["x", "y", "x", "x", "[1-5)", "y", "x"],
            "n": [1, 2, 1, 3, 1, 2, 1],
            "f": [0.5, np.nan, 0.5, 0.5, 2.0, np.nan, 0.5],
            "o": ["p", None, "p", "p", "q", None, "p"],
            "s": pd.array(["u", "v", "u", "u", "w", "v", "u"], dtype="string[pyarrow]"),
            "t": pd.array(["u", None, "u", "u", "w", None, "u"], dtype="string[pyarrow]"),
            "c": pd.Categorical(["k", "l", "k", "k", "m", "l", "k"]),
        }
    )


def _expected(table: pd.DataFrame) -> list[bytes]:
    """Each row's cells as pandas writes them as text, serialized."""
    text = table.astype(str)
    return [
        pb.ReleasedRecord(values=list(row)).SerializeToString()
        for row in text.itertuples(index=False, name=None)
    ]


def test_released_rows_are_the_rows_as_text_in_order() -> None:
    table = _table()
    batch = released_rows(table, encode_record)
    assert len(batch) == len(table)
    assert len(batch.rows) == 4  # rows 0, 2 and 6 alike, 1 and 5 alike, 3, 4
    assert batch.codes.tolist() == [0, 1, 0, 2, 3, 1, 0]
    assert batch.codes.dtype == np.uint8
    assert record_bytes(table) == _expected(table)
    assert record_bytes(table.iloc[:0]) == []


@pytest.mark.parametrize("cuts", [[0, 7], [0, 3, 7], [0, 1, 2, 3, 4, 5, 6, 7], [0, 6, 6, 7]])
def test_records_are_the_same_however_the_rows_are_cut(cuts: list[int]) -> None:
    table = _table()
    batches = [
        released_rows(table.iloc[lo:hi], encode_record) for lo, hi in itertools.pairwise(cuts)
    ]
    records = LocalRecords(lambda: batches)
    assert len(records) == len(table)
    assert records.expand() == _expected(table)
    assert measured_size(records.longest) == measured_size(_expected(table))
    assert [r for piece in records.pieces(2) for r in piece] == _expected(table)
    assert all(1 <= len(piece) <= 2 for piece in records.pieces(2))


def _lone_batches(table: pd.DataFrame, size: int, served: list[weakref.ref]) -> Iterator:
    """The table's batches as an engine yields them; before the next one is made, the daemon
    must have dropped the previous one's records (it holds one batch at a time)."""
    for start in range(0, len(table), size):
        if served:
            gc.collect()
            assert served[-1]() is None, "the previous batch is still held"
        batch = released_rows(table.iloc[start : start + size], encode_record)
        served.append(weakref.ref(batch.codes))
        yield batch
        del batch  # as the engine does: the batch is the consumer's once handed over


class _Federation:
    """Two parties' and the leader's union keys: a route to seal for and peel."""

    def __init__(self) -> None:
        self.keys = [X25519PrivateKey.generate() for _ in range(3)]
        route = tuple(k.public_key().public_bytes_raw() for k in self.keys)
        self.ctx = UnionContext(b"s" * 16, 4, route, 128)
        self.role = UnionRole(self.keys[0], 0, SEQUENTIAL)
        self.role.route = route

    def open(self, sealed: list[bytes]) -> list[bytes]:
        batch = sealed
        for hop in range(2):
            batch = peel_layer(batch, self.keys[hop], hop, self.ctx)
        return open_records(batch, self.keys[2], self.ctx)


@pytest.mark.parametrize("pad_to", [None, 40])
def test_seal_takes_one_batch_and_one_piece_at_a_time_as_one_owner_batch(
    monkeypatch: pytest.MonkeyPatch, pad_to: int | None
) -> None:
    table = pd.concat([_table()] * 5, ignore_index=True)  # 35 records
    monkeypatch.setattr(union, "SEAL_PIECE_RECORDS", 4)
    pieces: list[int] = []
    real_seal = onion_union.seal_records

    def seal_spy(records: list[bytes], *args: object, **kwargs: object) -> list[bytes]:
        pieces.append(len(records))
        return real_seal(records, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(union, "seal_records", seal_spy)
    served: list[weakref.ref] = []
    records = LocalRecords(lambda: _lone_batches(table, 10, served))
    assert len(records) == 35 and len(served) == 4
    federation = _Federation()
    sealed = federation.role.seal(records, federation.ctx, pad_to)
    assert len(served) == 8  # a second pass over the engine's batches, one at a time
    assert max(pieces) <= 4 and sum(pieces) == 35  # then the dummies, if padded
    assert len(sealed) == (pad_to or 35)
    # One owner batch: every item carries the same ephemeral key for the first party's layer.
    assert len({item[:32] for item in sealed}) == 1
    assert sorted(federation.open(sealed)) == sorted(_expected(table))


def test_more_records_than_pad_to_is_refused_before_sealing() -> None:
    table = _table()
    federation = _Federation()
    records = LocalRecords(lambda: [released_rows(table, encode_record)])
    with pytest.raises(ValueError, match="more records than pad_to=6"):
        federation.role.seal(records, federation.ctx, 6)


def test_a_batch_is_what_the_engine_hands_over() -> None:
    """The records type carries no table: distinct rows, encoded, and a code per record."""
    rows = [encode_record(("a",)), encode_record(("b",))]
    batch = ReleasedRows(rows, np.array([0, 1, 1, 0], dtype=np.uint8))
    assert LocalRecords(lambda: [batch]).expand() == [
        pb.ReleasedRecord(values=[v]).SerializeToString() for v in "abba"
    ]


def test_the_longest_record_is_measured_over_every_row_of_every_batch() -> None:
    """The padded record size (measure) comes from the longest record: it may be any distinct
    row of any batch, not the first of one."""
    short, long_, longest = (encode_record((v,)) for v in ("a", "b" * 30, "c" * 50))
    first = ReleasedRows([short, long_], np.array([0, 1, 0], dtype=np.uint8))
    second = ReleasedRows([short, longest, long_], np.array([2, 0, 1], dtype=np.uint8))
    records = LocalRecords(lambda: [first, second])
    assert len(records) == 6 and records.longest == [longest]
    assert LocalRecords(lambda: [first]).longest == [long_]
    assert LocalRecords(lambda: []).longest == []
