"""The union's guards against a dishonest party, and what MEASURE reveals (issue #22, defect 10).

In-process production daemons with mutual TLS (tests/harness/inprocess.py); one party's wire end is
altered by a server interceptor. Each test names the check it keeps alive:

* the leader counts the peeled batch exactly (a last party returning MORE items could add
  records sealed to the leader's key), and in shuffle mode each party's item count exactly;
* a party hop refuses a batch that repeats an item (a replayed ciphertext would mark one record
  through every shuffle), naming who handed it the batch;
* MEASURE says only the record size rounded up to 64 bytes, and no count under ``pad_to``;
* the leader compares the parties' columns in order (a party with reordered columns would have
  its values land under another party's headers).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import astuple
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fedanon.crypto.onion_union import _REAL, UnionContext, _inner, _seal_innermost
from fedanon.errors import FedanonError
from fedanon.federation.transport import make_channel
from fedanon.leader.sim import split_table
from fedanon.party.union import measured_size
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.distributed.conftest import (
    Dataset,
    assert_same_release,
    centralized,
    run_distributed,
)
from tests.harness.inprocess import inprocess_parties
from tests.harness.wire import (
    UnaryServerRecorder,
    first_strip_fetch,
    set_union_items,
    union_items,
)

Around = Callable[..., Any]


class Interceptor(UnaryServerRecorder):
    def __init__(self, around: Around | None = None) -> None:
        self._around = around

    def around(self, method: str, request: Any, context: Any, inner: Callable) -> Any:
        if self._around is None:
            return inner(request, context)
        return self._around(method, request, context, inner)


def _run(
    dataset: Dataset,
    parts: list[pd.DataFrame],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    altered: dict[str, Around],
    live: dict[str, Any] | None = None,
    **options: Any,
) -> tuple[Path, dict[str, Any]]:
    """Run an LKC job over in-process parties, `altered` naming the parties' interceptors;
    `live` (if given) holds the started parties under "started" while the job runs."""
    with inprocess_parties(
        parts,
        tmp_path / "fed",
        monkeypatch,
        ca_name="fedanon union guards CA",
        server_interceptor=lambda name: Interceptor(altered.get(name)),
        hop_channel_factory=lambda _name: make_channel,
        taxonomy_of=lambda _index: dataset.taxonomy_path,
    ) as started:
        if live is not None:
            live["started"] = started
        out = tmp_path / "release.csv"
        spec = dataset.spec(L=2, K=15, C="0.25")
        report = run_distributed(started.hops, started.leader_tls, dataset, spec, out, **options)
        return out, report


@pytest.fixture(scope="module")
def small(hospital_data: Dataset) -> Dataset:
    return hospital_data.head(600)


def _parts(dataset: Dataset) -> list[pd.DataFrame]:
    return split_table(dataset.table, 3, "random", seed=4)


def test_a_last_party_injecting_a_record_sealed_to_the_leader_fails_the_union(
    small: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last hop holds the peeled batch, whose items are sealed only to the leader's key
    (which it knows): one more such item would open as a genuine record of the release."""
    live: dict[str, Any] = {}

    def injects_one(method: str, request: Any, context: Any, inner: Callable) -> Any:
        if method == "Union" and request.phase == pb.UNION_PHASE_STRIP:
            live["record_size"] = request.record_size
        reply = inner(request, context)
        if first_strip_fetch(method, request) and reply.packed:
            session = live["started"].servicers["hospital-3"].session
            ctx = UnionContext(
                bytes.fromhex(session.session_id),
                request.ref.iteration,
                session.union.route,
                live["record_size"],
            )
            forged = pb.ReleasedRecord(values=["forged"] * len(small.table.columns))
            inner_item = _inner(_REAL, forged.SerializeToString(), ctx.record_size)
            items = union_items(reply) + _seal_innermost(astuple(ctx), [inner_item])
            set_union_items(reply, items)
        return reply

    with pytest.raises(FedanonError, match="hospital-3 returned 601 peeled items, not the 600"):
        _run(small, _parts(small), tmp_path, monkeypatch, {"hospital-3": injects_one}, live=live)
    assert not (tmp_path / "release.csv").exists()


@pytest.mark.parametrize("mode", ["layered", "shuffle"])
def test_a_party_replying_bytes_that_are_no_whole_items_is_named(
    small: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Items travel packed: a party whose reply's `packed` is not a whole number of its
    `item_size` items is named by the leader in one line, and nothing is released."""

    def cuts_one_byte(method: str, request: Any, context: Any, inner: Callable) -> Any:
        reply = inner(request, context)
        if method == "Union" and reply.packed:
            reply.packed = reply.packed[:-1]
        return reply

    with pytest.raises(
        FedanonError,
        match=r"union: party hospital-3 sent union UnionReply: \d+ packed bytes are "
        r"not a whole number of \d+-byte items",
    ):
        _run(
            small,
            _parts(small),
            tmp_path,
            monkeypatch,
            {"hospital-3": cuts_one_byte},
            union_mode=mode,
        )
    assert not (tmp_path / "release.csv").exists()


def test_a_party_whose_sealed_items_are_not_the_first_hops_size_is_named(
    small: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every COLLECT item must have the first hop's size (the route and record size fix it): a
    party answering items of another size is named at once by the leader, not left for hop 0
    to refuse as a batch the leader handed over."""

    def shortens(method: str, request: Any, context: Any, inner: Callable) -> Any:
        reply = inner(request, context)
        if method == "Union" and request.phase == pb.UNION_PHASE_COLLECT and reply.packed:
            set_union_items(reply, [item[:-1] for item in union_items(reply)])
        return reply

    with pytest.raises(
        FedanonError, match=r"union \(collect\): party hospital-2 sent items of \d+ bytes, not \d+"
    ):
        _run(small, _parts(small), tmp_path, monkeypatch, {"hospital-2": shortens})
    assert not (tmp_path / "release.csv").exists()


def test_a_party_sending_an_extra_shuffle_item_is_named(
    small: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def adds_one(method: str, request: Any, context: Any, inner: Callable) -> Any:
        reply = inner(request, context)
        if (
            method == "Union"
            and request.phase == pb.UNION_PHASE_SHUFFLE_STEP
            and request.step == 0
            and request.chunk == request.chunks - 1
        ):
            set_union_items(reply, [*union_items(reply), bytes(64)])
        return reply

    with pytest.raises(
        FedanonError, match=r"union \(step 0\): party hospital-2 sent 1 items, expected 0"
    ):
        _run(
            small,
            _parts(small),
            tmp_path,
            monkeypatch,
            {"hospital-2": adds_one},
            union_mode="shuffle",
        )
    assert not (tmp_path / "release.csv").exists()


def test_a_hop_refuses_a_repeated_item_and_names_who_sent_the_batch(
    small: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hospital-1 (its predecessor) hands hospital-2 a STRIP batch with one ciphertext twice:
    hospital-2 refuses it naming hospital-1, before any shuffle could carry the mark on."""

    def repeats_one(method: str, request: Any, context: Any, inner: Callable) -> Any:
        if method == "Union" and request.phase == pb.UNION_PHASE_STRIP:
            items = union_items(request)
            if len(items) > 1:
                set_union_items(request, [items[0], items[0], *items[2:]])
        return inner(request, context)

    with pytest.raises(
        FedanonError,
        match=r"union \(strip\): party hospital-2: union: the batch hospital-1 sent: union "
        r"batch at hop 1 repeats an item \(replayed record\)",
    ):
        _run(small, _parts(small), tmp_path, monkeypatch, {"hospital-2": repeats_one})
    assert not (tmp_path / "release.csv").exists()


def test_measure_reveals_only_a_rounded_size_and_no_count_under_padding(
    small: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    measured: list[pb.UnionReply] = []

    def records(method: str, request: Any, context: Any, inner: Callable) -> Any:
        reply = inner(request, context)
        if method == "Union" and request.phase == pb.UNION_PHASE_MEASURE:
            measured.append(reply)
        return reply

    spy = {f"hospital-{i}": records for i in (1, 2, 3)}
    out, report = _run(small, _parts(small), tmp_path, monkeypatch, spy, union_pad_to=400)
    assert len(measured) == 3
    assert all(r.count == 0 and r.record_size % 64 == 0 for r in measured), measured
    assert_same_release(out, report, centralized(small, small.spec(L=2, K=15, C="0.25")))


@pytest.mark.parametrize(
    ("sizes", "rounded"),
    [((), 64), ((1,), 64), ((63, 64), 64), ((65,), 128), ((10, 130, 3), 192), ((128,), 128)],
)
def test_measured_size_is_the_longest_record_rounded_up_to_64(
    sizes: tuple[int, ...], rounded: int
) -> None:
    assert measured_size([b"r" * n for n in sizes]) == rounded


def test_a_party_with_reordered_columns_is_refused_at_the_handshake(
    small: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same columns, another order: joining would put hospital-2's values under hospital-1's
    headers, so the leader refuses (it does not realign)."""
    parts = _parts(small)
    parts[1] = parts[1][list(reversed(parts[1].columns))]
    with pytest.raises(FedanonError, match="handshake: party hospital-2 has columns"):
        _run(small, parts, tmp_path, monkeypatch, {})
    assert not (tmp_path / "release.csv").exists()


def test_a_hop_peels_each_strip_chunk_as_it_arrives(
    small: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hop checks and peels STRIP's input chunk by chunk (the decryption overlaps the
    transfer of the next chunk), so a chunk that repeats an item of an earlier chunk is refused
    when it arrives: the chunks after it are never sent (a hop that waited for the whole batch
    took every chunk, then refused it)."""
    arrived: list[int] = []
    first: list[bytes] = []

    def repeats_across_chunks(method: str, request: Any, context: Any, inner: Callable) -> Any:
        if method == "Union" and request.phase == pb.UNION_PHASE_STRIP:
            arrived.append(request.chunk)
            items = union_items(request)
            if request.chunk == 0:
                first.append(items[0])
            elif request.chunk == 1:
                set_union_items(request, [first[0], *items[1:]])
        return inner(request, context)

    with pytest.raises(
        FedanonError,
        match=r"union \(strip\): party hospital-2: union: the batch hospital-1 sent: union "
        r"batch at hop 1 repeats an item \(replayed record\)",
    ):
        _run(
            small,
            _parts(small),
            tmp_path,
            monkeypatch,
            {"hospital-2": repeats_across_chunks},
            union_chunk_bytes=4 << 10,
        )
    assert arrived == [0, 1]
    assert not (tmp_path / "release.csv").exists()


def test_the_report_gives_the_unions_critical_path_and_each_hop_logs_its_own(
    small: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    """The leader's report times every union phase it waits on (seconds per phase, in order),
    and each party's log says how long its strip input took to arrive and how long it worked
    after the last chunk, hop by hop; the release is the centralized one, its STRIP in
    several chunks."""
    caplog.set_level(logging.INFO, logger="fedanon.party.ring")
    parts = _parts(small)
    out, report = _run(small, parts, tmp_path, monkeypatch, {}, union_chunk_bytes=4 << 10)
    assert_same_release(out, report, centralized(small, small.spec(L=2, K=15, C="0.25")))
    phases = report["union_seconds"]
    assert list(phases) == ["measure", "collect", "strip", "open"]
    assert all(s > 0 for s in phases.values())
    assert sum(phases.values()) <= report["seconds"]["union"]
    hops = [m for m in caplog.messages if m.startswith("union strip at hop") and "arrived" in m]
    items = report["records"]
    assert [h.split(":")[0] for h in hops] == [f"union strip at hop {h}" for h in range(3)]
    for line in hops:
        chunks = int(re.search(r"in (\d+) chunks", line).group(1))  # type: ignore[union-attr]
        assert f": {items} items in" in line and chunks > 1
    forwarded = [m for m in caplog.messages if "forwarded in" in m]
    # Hop 1 forwards inside hop 0's forwarding: its line comes first.
    assert [m.split(":")[0] for m in forwarded] == ["union strip at hop 1", "union strip at hop 0"]

    out, report = _run(small, parts, tmp_path / "shuffle", monkeypatch, {}, union_mode="shuffle")
    assert list(report["union_seconds"]) == [
        "measure",
        "share",
        "step 1",
        "step 2",
        "step 3",
        "open",
    ]
