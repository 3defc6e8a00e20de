"""What crosses the wire in vertical DRBT, and what the release reveals (docs/drbt-vertical.md,
'Who learns what').

Design of the wire tests
------------------------
The parties are the production servers of ``fedanon.party.daemon.build_server`` run in this process
with a recording server interceptor (:mod:`tests.drbt_vertical.harness`): for every call a party
serves it keeps the caller's certificate name and the serialized request and reply. In vertical
DRBT the parties talk only to the leader (the ring's next-hop channel is recorded too and must
stay unused), so these are all the protocol's messages, in both directions.

The secrets are known because the parties run in-process: each party's raw attribute values
(parsed from the text it loaded), their z-scores over the common ids (computed by the test with
the spec's formula) and its projection matrix R (recorded by wrapping
``fedanon.algorithms.drbt.projection.random_matrix``, the function ``project_block`` draws R with).
A
secret "is on the wire" when any 8-byte window of any serialized message, at any offset and in
either byte order, decodes to a float64 equal to it up to 1e-12 (relative above 1, absolute
below), so a last-bit rounding difference in the oracle cannot hide a leak. Positive controls
show the scanner does find values that *are* sent (each projected block, in its Project reply)
and catches a party that sends its z-scored attributes instead of a projection.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import grpc
import numpy as np
import pandas as pd
import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from fedanon.algorithms.drbt.datasets import load_thesis_set
from fedanon.federation.transport import make_channel
from fedanon.leader.kinds.drbt import DRBTLeaderJob, run_drbt
from fedanon.leader.sim import split_columns
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from fedanon.readers.datadir import data_dir
from tests.drbt_vertical.harness import (
    InProcessFederation,
    clustered_table,
    default_k,
    inprocess_federation,
    protocol,
    zscore_population,
)

CHESS = data_dir() / "fimi" / "chess.dat"
requires_chess = pytest.mark.skipif(not CHESS.exists(), reason=f"{CHESS} not found")

PARTY_RECEIVES: dict[str, type[Message]] = {
    "OpenSession": pb.OpenSessionRequest,
    "Ids": pb.IdsRequest,
    "Project": pb.ProjectRequest,
    "Assign": pb.AssignRequest,
    "End": pb.EndRequest,
}
FLOAT_TYPES = {FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_BYTES}


# ------------------------------------------------------------------------------ helpers
def secret_values(values: Iterable[float] | np.ndarray) -> np.ndarray:
    """The distinct non-zero values, sorted (what `occurrences` looks for)."""
    array = np.unique(np.asarray(values, dtype=float).ravel())
    return array[array != 0.0]


def occurrences(message: bytes, secrets: np.ndarray, rel: float = 1e-12) -> int:
    """How many 8-byte windows of `message`, at any offset and in either byte order, decode to
    a float64 within `rel` of one of the sorted `secrets` (relative above 1, absolute below).

    Matching values rather than bit patterns also catches a secret that was recomputed with a
    last-bit rounding difference.
    """
    found = 0
    for offset in range(8):
        usable = (len(message) - offset) // 8
        if usable <= 0:
            continue
        for order in ("<f8", ">f8"):
            window = np.frombuffer(message, dtype=order, count=usable, offset=offset)
            window = window[np.isfinite(window)]
            if window.size == 0:
                continue
            at = np.clip(np.searchsorted(secrets, window), 1, secrets.size - 1)
            nearest = np.minimum(np.abs(window - secrets[at - 1]), np.abs(window - secrets[at]))
            found += int((nearest <= rel * np.maximum(np.abs(window), 1.0)).sum())
    return found


def scalar_fields(message: Message) -> list[tuple[str, int]]:
    """(name, type) of every set field, recursively."""
    out = []
    for descriptor, value in message.ListFields():
        if descriptor.type == FieldDescriptor.TYPE_MESSAGE:
            items = [value] if isinstance(value, Message) else list(value)
            for item in items:
                out += [(f"{descriptor.name}.{n}", t) for n, t in scalar_fields(item)]
        else:
            out.append((descriptor.name, descriptor.type))
    return out


def party_secrets(
    fed: InProcessFederation, parts: list[pd.DataFrame], ids: list[str]
) -> dict[str, dict[str, np.ndarray]]:
    """Per party: raw values (as the party parsed its text), z-scores, R entries, released."""
    recorded = fed.projections.by_attributes()
    out = {}
    for hop, part in zip(fed.hops, parts, strict=True):
        assert fed.servicers[hop.name].table.shape[1] == part.shape[1]
        text = fed.servicers[hop.name].table  # what the party loaded, all text
        attributes = [c for c in text.columns if c != "pid"]
        raw = np.array([[float(v) for v in text[c]] for c in attributes]).T
        common = pd.DataFrame(raw, index=text["pid"].astype(str)).loc[ids].to_numpy()
        projection = recorded[tuple(attributes)]
        out[hop.name] = {
            "raw": secret_values(raw),
            "zscored": secret_values(zscore_population(common)),
            "matrix": secret_values(projection.matrix),
            "released": secret_values(projection.block),
        }
    return out


def run_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: list[pd.DataFrame], **job
) -> tuple[InProcessFederation, dict]:
    with inprocess_federation(parts, tmp_path / "fed", monkeypatch) as fed:
        report = run_drbt(
            DRBTLeaderJob(
                parties=fed.hops,
                tls=fed.leader_tls,
                out=tmp_path / "release.csv",
                id_column="pid",
                send_assignment=True,
                **job,
            )
        )
    return fed, report


# ------------------------------------------------------------------------------ wire tests
@pytest.mark.parametrize(("parties", "matrix"), [(2, "sparse"), (3, "gaussian"), (4, "sparse")])
def test_no_raw_value_zscore_or_matrix_entry_on_the_wire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parties: int, matrix: str
) -> None:
    table, _ = clustered_table(m=240, d=12, seed=parties)
    parts = split_columns(table, parties, "pid")
    fed, _report = run_recorded(tmp_path, monkeypatch, parts, matrix=matrix, clusters=3)
    ids = list(table["pid"])
    secrets = party_secrets(fed, parts, ids)
    messages = fed.log.messages()
    assert len(protocol(fed.log)) == parties * 5 + 1  # Open, Ids x1 (x2 first), Project, ...
    for name, kinds in secrets.items():
        assert kinds["raw"].size == kinds["zscored"].size >= 240 * 2
        for kind in ("raw", "zscored", "matrix"):
            found = sum(occurrences(m, kinds[kind]) for m in messages)
            assert found == 0, f"{found} {kind} values of {name} crossed the wire"
    # positive control: each party's projected block is found, in its own Project reply only
    for hop in fed.hops:
        released = secrets[hop.name]["released"]
        (call,) = protocol(fed.log, hop.name, "Project")
        assert call.answer_data is not None, "the Project call was aborted"
        assert occurrences(call.answer_data, released) >= 240 * call.answer.block.cols
        others = [
            m
            for c in fed.log.of(kind="request")
            if c is not call
            for m in (c.data, c.answer_data or b"")
        ]
        assert sum(occurrences(m, released) for m in others) == 0


def test_scanner_catches_a_party_that_sends_its_zscores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Positive control: a broken party whose 'projection' keeps k z-scored attributes."""
    import fedanon.party.handlers.drbt_session

    monkeypatch.setattr(
        fedanon.party.handlers.drbt_session,
        "project_block",
        lambda block, k, matrix, rng, rescale=False: block[:, :k].copy(),
    )
    table, _ = clustered_table(m=240, d=8, seed=2)
    parts = split_columns(table, 2, "pid")
    fed, _report = run_recorded(tmp_path, monkeypatch, parts, clusters=3)
    secrets = party_secrets(fed, parts, list(table["pid"]))
    for hop in fed.hops:
        (call,) = protocol(fed.log, hop.name, "Project")
        assert call.answer_data is not None, "the Project call was aborted"
        assert occurrences(call.answer_data, secrets[hop.name]["zscored"]) >= 240 * 2
        assert occurrences(call.answer_data, secrets[hop.name]["raw"]) == 0


def test_parties_receive_only_ids_and_cluster_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Party i never receives anything derived from party j's block: its requests carry the
    job, the ring, party 1's id list and K-means labels - no float, no bytes field at all."""
    table, _ = clustered_table(m=200, d=12, seed=8)
    parts = split_columns(table, 3, "pid")
    fed, _report = run_recorded(tmp_path, monkeypatch, parts, clusters=4)
    ids = list(table["pid"])
    secrets = party_secrets(fed, parts, ids)
    assert fed.log.calls_made == []  # no party ever called another party
    for index, hop in enumerate(fed.hops):
        calls = protocol(fed.log, hop.name)
        expected = ["OpenSession", "Ids", "Project", "Assign", "End"]
        if index == 0:
            expected.insert(1, "Ids")  # the id list is asked of the first party
        assert [c.method for c in calls] == expected
        for call in calls:
            assert call.peer == "leader"
            request = PARTY_RECEIVES[call.method].FromString(call.data)
            for field, kind in scalar_fields(request):
                assert kind not in FLOAT_TYPES, f"{hop.name} received {call.method}.{field}"
            others = secret_values(
                np.concatenate(
                    [
                        s[k]
                        for n, s in secrets.items()
                        if n != hop.name
                        for k in ("raw", "zscored", "matrix", "released")
                    ]
                )
            )
            assert occurrences(call.data, others) == 0
        id_calls = [c.message for c in calls if c.method == "Ids"]
        assert list(id_calls[-1].ids) == ids
        (assign,) = [c.message for c in calls if c.method == "Assign"]
        assert len(assign.clusters) == len(ids) and set(assign.clusters) <= set(range(4))
        (opened,) = [c.message for c in calls if c.method == "OpenSession"]
        assert opened.WhichOneof("job") == "drbt"
        assert list(opened.ring) == [h.name for h in fed.hops]
    # what the leader receives: attribute names, ids only from party 1, the projected blocks
    for index, hop in enumerate(fed.hops):
        replies = {c.method: c.answer for c in protocol(fed.log, hop.name) if c.method != "Ids"}
        assert list(replies["OpenSession"].attributes) == list(parts[index].columns[1:])
        id_replies = [c.answer for c in protocol(fed.log, hop.name, "Ids")]
        sent_ids = [i for r in id_replies for i in r.ids]
        assert sent_ids == (ids if index == 0 else [])
        assert [r.missing for r in id_replies][-1] == 0
        block = replies["Project"].block
        assert (block.rows, block.cols) == (200, default_k(len(parts[index].columns) - 1))


def test_party_refuses_a_second_projection_in_one_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KNOWN FAILURE (bug report: party/handlers/drbt_session.py, DRBTSession.project).

    Each Project draws a fresh R, and nothing stops a leader from asking twice: with k_i >=
    d_i / 2 two replies D R1, D R2 are together D [R1 R2], a d x 2k projection with 2k >= d -
    the invertible release the spec refuses (k = d). With d known records the leader recovers
    every value; averaging many replies estimates D D^T. The party should answer Project once
    per agreed id list.
    """
    table, _ = clustered_table(m=50, d=6)
    with inprocess_federation(split_columns(table, 1, "pid"), tmp_path / "fed", monkeypatch) as fed:
        hop = fed.hops[0]
        channel = make_channel(hop.address, hop.name, fed.leader_tls)
        stub = pb_grpc.PartyStub(channel)
        ref = pb.SessionRef(session_id="cd" * 16)
        try:
            stub.OpenSession(
                pb.OpenSessionRequest(
                    ref=ref, drbt=pb.DRBTJob(id_column="pid", matrix="sparse"), ring=[hop.name]
                ),
                timeout=10,
            )
            assert stub.Ids(pb.IdsRequest(ref=ref, ids=list(table["pid"])), timeout=10).missing == 0
            first = stub.Project(pb.ProjectRequest(ref=ref), timeout=10)
            assert (first.block.rows, first.block.cols) == (50, 3)
            with pytest.raises(grpc.RpcError) as refused:
                stub.Project(pb.ProjectRequest(ref=ref), timeout=10)
            assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        finally:
            stub.End(pb.EndRequest(ref=ref), timeout=10)
            channel.close()


def test_release_row_order_does_not_follow_the_id_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KNOWN FAILURE (bug report: leader/kinds/drbt.py, run_drbt, release construction).

    The release replaces ids by random tokens, but writes the rows in id-list order (the
    first party's table order): whoever knows that order - the first party, or anyone when the
    ids are sorted, as here - links every released row to its object by position, and the
    tokens hide nothing. The rows must be shuffled. Rows are linked to objects through the
    first party's recorded projected block (the oracle).
    """
    table, _ = clustered_table(m=300, d=12, seed=4)
    parts = split_columns(table, 2, "pid")
    fed, _report = run_recorded(tmp_path, monkeypatch, parts, clusters=3)
    release = pd.read_csv(tmp_path / "release.csv")
    first = fed.projections.by_attributes()[tuple(parts[0].columns[1:])].block  # id-list order
    k1 = first.shape[1]
    position = {tuple(np.round(row, 9)): i for i, row in enumerate(first)}
    linked = [
        position[tuple(np.round(row, 9))]
        for row in release[[f"p{j + 1}" for j in range(k1)]].to_numpy()
    ]
    assert sorted(linked) == list(range(300))
    in_place = sum(i == j for i, j in enumerate(linked))
    assert in_place < 30, f"{in_place} of 300 released rows sit at their object's id position"


# ------------------------------------------------------------------------------ statistics
def max_abs_correlation(released: np.ndarray, raw: np.ndarray) -> float:
    a = (released - released.mean(0)) / released.std(0)
    b = (raw - raw.mean(0)) / raw.std(0)
    return float(np.abs(a.T @ b / len(a)).max())


def test_correlation_detector_flags_a_copied_attribute() -> None:
    """Positive control: a released column that is a raw attribute up to sign and scale."""
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(500, 5))
    assert max_abs_correlation(-3.0 * raw[:, [2]], raw) > 0.999
    assert max_abs_correlation((raw[:, [1]] + raw[:, [3]]) / np.sqrt(2), raw) < 0.8


@requires_chess
@pytest.mark.parametrize("parties", [1, 2, 3, 4])
def test_released_columns_are_not_raw_chess_attributes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parties: int
) -> None:
    """No released column has |correlation| > 0.99 with any raw Chess attribute (any party).

    Chess read as the thesis did (3196 x 37 numeric rows); three sessions per party count, a
    fresh secret R each. The largest |correlation| between two raw Chess attributes is 0.67, so
    a column mixing two or more attributes stays below sqrt((1 + 0.67) / 2) = 0.91 while a
    copied attribute would give 1.0.
    """
    raw = load_thesis_set("chess")
    table = pd.DataFrame(raw, columns=[f"c{j + 1}" for j in range(raw.shape[1])])
    table.insert(0, "pid", [f"r{i}" for i in range(len(table))])
    parts = split_columns(table, parties, "pid")
    worst = 0.0
    with inprocess_federation(parts, tmp_path / "fed", monkeypatch) as fed:
        for trial in range(3):
            out = tmp_path / f"release-{trial}.csv"
            report = run_drbt(
                DRBTLeaderJob(
                    parties=fed.hops,
                    tls=fed.leader_tls,
                    out=out,
                    id_column="pid",
                    clusters=3,
                    seed=trial,
                )
            )
            assert report["objects"] == 3196
            released = pd.read_csv(out).filter(regex=r"^p\d+$").to_numpy()
            assert released.shape[1] == sum(default_k(p.shape[1] - 1) for p in parts)
            worst = max(worst, max_abs_correlation(released, raw))
    assert worst < 0.99, f"a released column correlates {worst:.4f} with a raw attribute"
