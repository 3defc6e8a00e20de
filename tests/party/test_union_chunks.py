"""The union's chunked messages: how batches are cut, and the party's guards on chunks."""

from __future__ import annotations

import pandas as pd
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.packed import Packed, PackingError
from fedanon.crypto.parallel import SEQUENTIAL
from fedanon.federation.chunks import DEFAULT_CHUNK_BYTES, MIN_CHUNK_BYTES, split, unpacked
from fedanon.party.errors import NotExpected
from fedanon.party.union import MAX_INPUT_CHUNKS, Inbox, UnionRole, chunk_bytes_of, record_bytes
from fedanon.protos import fedanon_v1_pb2 as pb

STRIP, STEP = pb.UNION_PHASE_STRIP, pb.UNION_PHASE_SHUFFLE_STEP


def test_split_keeps_order_and_bounds_every_chunk() -> None:
    items = [bytes([i]) * 10 for i in range(7)]
    chunks = [chunk.items() for chunk in split(items, 25)]
    assert chunks == [items[0:2], items[2:4], items[4:6], items[6:7]]
    assert split([], 25) == []
    # An item above the bound still travels, alone.
    assert [c.items() for c in split([b"x" * 40, b"y"], 25)] == [[b"x" * 40], [b"y"]]
    # A packed batch is cut the same way, without an object per item.
    assert [c.items() for c in split(Packed.of(items), 25)] == chunks


def test_split_ends_a_chunk_where_the_item_size_changes() -> None:
    """A chunk travels packed (one size per message): the shuffle's short last piece of a share
    starts a chunk of its own even where it would fit in the bound."""
    chunks = split([b"a" * 10, b"b" * 10, b"c" * 4, b"d" * 10], 100)
    assert [(c.item_size, c.items()) for c in chunks] == [
        (10, [b"a" * 10, b"b" * 10]),
        (4, [b"c" * 4]),
        (10, [b"d" * 10]),
    ]


@pytest.mark.parametrize(("packed", "item_size"), [(b"x" * 7, 2), (b"x" * 4, 0), (b"x" * 300, 7)])
def test_a_packed_field_that_is_no_whole_number_of_items_is_refused(
    packed: bytes, item_size: int
) -> None:
    for message in (pb.UnionRequest, pb.UnionReply):
        with pytest.raises(PackingError, match="not a whole number of"):
            unpacked(message(packed=packed, item_size=item_size))
    assert unpacked(pb.UnionRequest(packed=b"x" * 6, item_size=2)).items() == [b"xx"] * 3
    assert len(unpacked(pb.UnionReply())) == 0


def test_inbox_returns_the_whole_input_with_the_last_chunk() -> None:
    inbox = Inbox()
    assert inbox.receive(STRIP, 0, 0, 3, [b"a", b"b"]) is None
    assert inbox.receive(STRIP, 0, 1, 3, [b"c"]) is None
    assert inbox.receive(STRIP, 0, 2, 3, [b"d"]) == [b"a", b"b", b"c", b"d"]
    assert inbox.receive(STRIP, 0, 0, 1, [b"e"]) == [b"e"]  # a single message is one chunk


@pytest.mark.parametrize(
    "second",
    [
        (STRIP, 0, 2, 3),  # chunk 1 skipped
        (STRIP, 0, 1, 4),  # another chunk count
        (STEP, 0, 1, 3),  # another phase
        (STRIP, 1, 1, 3),  # another step
    ],
)
def test_inbox_refuses_a_chunk_out_of_order_or_of_another_input(
    second: tuple[int, int, int, int],
) -> None:
    inbox = Inbox()
    inbox.receive(STRIP, 0, 0, 3, [b"a"])
    phase, step, chunk, chunks = second
    with pytest.raises(NotExpected, match="out of order"):
        inbox.receive(phase, step, chunk, chunks, [b"b"])


@pytest.mark.parametrize("chunk, chunks", [(3, 3), (0, 0), (0, MAX_INPUT_CHUNKS + 1)])
def test_inbox_refuses_chunk_numbers_out_of_range(chunk: int, chunks: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        Inbox().receive(STRIP, 0, chunk, chunks, [b"a"])


def test_only_the_kept_output_can_be_fetched() -> None:
    role = UnionRole(X25519PrivateKey.generate(), 0, SEQUENTIAL)
    with pytest.raises(NotExpected, match="no union output"):
        role.fetch(STRIP, 0, 0)
    role.keep_output(STRIP, 0, [Packed.of([b"a"]), Packed.of([b"b"])])
    assert role.fetch(STRIP, 0, 1).items() == [b"b"]
    with pytest.raises(ValueError, match="2 chunks"):
        role.fetch(STRIP, 0, 2)
    with pytest.raises(NotExpected, match="no union output"):
        role.fetch(STEP, 0, 0)
    role.keep_output(STEP, 1, [])  # a newer output replaces the older one
    with pytest.raises(NotExpected, match="no union output"):
        role.fetch(STRIP, 0, 0)


def test_chunk_bytes_must_fit_half_the_party_message_limit() -> None:
    limit = 64 << 20
    assert chunk_bytes_of(pb.UnionRequest(), limit) == DEFAULT_CHUNK_BYTES
    assert chunk_bytes_of(pb.UnionRequest(chunk_bytes=MIN_CHUNK_BYTES), limit) == MIN_CHUNK_BYTES
    for wrong in (MIN_CHUNK_BYTES - 1, limit // 2 + 1):
        with pytest.raises(ValueError, match="chunk_bytes"):
            chunk_bytes_of(pb.UnionRequest(chunk_bytes=wrong), limit)


def test_record_bytes_serializes_every_row_in_order() -> None:
    table = pd.DataFrame({"a": ["x", "y", "x", "x", "[1-5)"], "b": [1, 2, 1, 3, 1]})
    expected = [
        pb.ReleasedRecord(values=[a, b]).SerializeToString()
        for a, b in [("x", "1"), ("y", "2"), ("x", "1"), ("x", "3"), ("[1-5)", "1")]
    ]
    assert record_bytes(table) == expected
    assert record_bytes(table.iloc[:0]) == []


def test_packed_batches_hold_one_item_size_and_index_within_bounds() -> None:
    """A packed batch is cut at multiples of its one item size: items of different sizes are
    never packed or joined together, and an index past either end fails instead of wrapping
    round to another item."""
    with pytest.raises(PackingError, match="2 different sizes"):
        Packed.of([b"ab", b"cde", b"fg"])
    with pytest.raises(PackingError, match="items of 3 bytes, not 2"):
        Packed.concat([Packed.of([b"ab"]), Packed.of([b"cde", b"fgh"])], 2)
    joined = Packed.concat([Packed.of([b"ab"]), Packed.of([], 3), Packed.of([b"cd"])], 2)
    assert joined.items() == [b"ab", b"cd"]
    batch = Packed.of([b"ab", b"cd", b"ef"])
    assert (batch[0], batch[-1], batch[-3]) == (b"ab", b"ef", b"ab")
    for index in (3, 4, -4):
        with pytest.raises(IndexError):
            batch[index]
    with pytest.raises(IndexError):
        Packed.of([], 2)[0]
