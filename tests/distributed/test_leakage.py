"""What each role receives (docs/leakage.md, 'The distributed LKC protocol, message by message').

Every message the leader and each party receive during real sessions is recorded on the wire
ends by gRPC interceptors (design in :mod:`tests.harness.wire`), and compared with
the plain local statistics each party computed (the oracle). The claims checked:

* the leader receives only handshake replies (whose fingerprint items are its own, i.e. carry
  nothing derived from data), key-sharing and End acknowledgements, masked sums and union
  batches of equal-size ciphertexts that contain no record value;
* in ring mode every partial sum a party receives is the plain prefix sum of the earlier
  parties plus the leader's fresh round mask R: no element equals the plain prefix, R is the
  same at every hop of a round, never reused across rounds, and its bytes look uniform;
* in pairwise mode no party receives anything derived from another party's vector, and each
  share the leader receives hides its party's vector while the shares still sum to the total;
* no party receives another party's records in clear (union items are ciphertexts).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fedanon.algorithms.tds.layout import StatsLayout
from fedanon.crypto.wire import unpack_frames
from fedanon.federation.protocol import handshake_items
from fedanon.leader.sim import LEADER_NAME, split_table
from fedanon.party.union import UnionRole, record_bytes
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.crypto.uniformity import looks_uniform
from tests.distributed.conftest import (
    Dataset,
    assert_same_release,
    centralized,
    hospital_dataset,
    run_distributed,
)
from tests.distributed.recording import RecordingFederation, recording_federation
from tests.harness.wire import Received
from tests.harness.wire import union_items as wire_union_items

PAIRWISE_SHARE_TAG = b"FPS1"  # crypto/pairwise.py: tag of a party's share to the leader
SECRET_MIN_BYTES = 6  # shorter values occur in random ciphertext by chance

# Values are message classes; type[Any] keeps fields readable after the isinstance checks.
LEADER_RECEIVES: dict[str, type[Any]] = {
    "OpenSession": pb.OpenSessionReply,
    "ShareKeys": pb.ShareKeysReply,
    "Sum": pb.SumReply,
    "Union": pb.UnionReply,
    "End": pb.EndReply,
    "Renew": pb.RenewReply,  # the lease heartbeat: the party's lease length only
}
PARTY_SERVES: dict[str, type[Any]] = {
    "OpenSession": pb.OpenSessionRequest,
    "ShareKeys": pb.ShareKeysRequest,
    "Sum": pb.SumRequest,
    "Union": pb.UnionRequest,
    "End": pb.EndRequest,
    "Renew": pb.RenewRequest,  # the lease heartbeat: a session reference only
}
PARTY_REPLIES_FROM_SUCCESSOR: dict[str, type[Any]] = {"Sum": pb.SumReply, "Union": pb.UnionReply}


@dataclass
class Recorded:
    """One finished, recorded session and what is needed to judge it."""

    fed: RecordingFederation
    dataset: Dataset
    report: dict[str, Any]
    ring: list[str]
    prepared: list[int]  # how many leader-layer keys each party prepared during the loop


def words(vector: pb.Vector) -> np.ndarray:
    data = np.frombuffer(vector.data, dtype="<u8")
    assert data.size == vector.length and vector.dtype == "<u8"
    return data


def share_words(share: bytes) -> np.ndarray:
    """The masked vector inside a pairwise share (session, round, sender, roster, vector)."""
    return np.frombuffer(unpack_frames(PAIRWISE_SHARE_TAG, share, 6)[-1], dtype="<u8")


def secrets_of(fed: RecordingFederation, dataset: Dataset) -> list[bytes]:
    """Byte strings that must never appear in a ciphertext: raw cell values long enough not to
    occur by chance (patient ids, places, diagnoses...) and every record in clear as the union
    encodes it (the serialized generalized row)."""
    values: set[bytes] = set()
    for table in fed.tables.values():
        for column in table.columns:
            values.update(
                v.encode()
                for v in table[column].astype(str).unique()
                if len(v.encode()) >= SECRET_MIN_BYTES
            )
    release = centralized(dataset, dataset.spec(L=3, K=20, C="0.2"))
    values.update(record_bytes(release.table))
    return sorted(values)


def private_secrets(secrets: list[bytes], dataset: Dataset) -> list[bytes]:
    """The secrets that are not public vocabulary. Taxonomy labels, column names and the job's
    sensitive and class values are in every handshake by design (they are the shared schema),
    so a plain message may contain them; it may not contain a patient id or a record."""
    spec = dataset.spec(L=3, K=20, C="0.2")
    public = "\n".join(
        [*spec.fingerprint_items(spec.schema(dataset.taxonomy)), *dataset.table.columns]
    ).encode()
    return [s for s in secrets if s not in public]


def _windows(blob: bytes) -> np.ndarray:
    """Every SECRET_MIN_BYTES-byte window of `blob` as one integer (vectorized scan)."""
    data = np.frombuffer(blob, dtype=np.uint8).astype(np.uint64)
    n = max(data.size - SECRET_MIN_BYTES + 1, 0)
    out = np.zeros(n, dtype=np.uint64)
    for k in range(SECRET_MIN_BYTES):
        out |= data[k : k + n] << np.uint64(8 * k)
    return out


def assert_no_secret(blobs: list[bytes], secrets: list[bytes], what: str) -> None:
    """No secret occurs as a substring of any blob.

    Every window of the joined blobs is compared at once with the secrets' first bytes; only
    windows that match are checked in full. 0xff never occurs in UTF-8 text or in a protobuf
    of strings, so no secret contains the separator and no match spans two blobs.
    """
    assert blobs, f"nothing recorded for {what}"
    assert secrets, f"no secrets to look for in {what}"
    joined = b"\xff".join(blobs)
    by_prefix: dict[int, list[bytes]] = {}
    for secret in secrets:
        key = int.from_bytes(secret[:SECRET_MIN_BYTES], "little")
        by_prefix.setdefault(key, []).append(secret)
    windows = _windows(joined)
    keys = np.fromiter(by_prefix, dtype=np.uint64, count=len(by_prefix))
    found = sorted(
        {
            secret
            for pos in np.flatnonzero(np.isin(windows, keys)).tolist()
            for secret in by_prefix[int(windows[pos])]
            if joined.startswith(secret, pos)
        }
    )
    assert not found, f"{what} contain record values in clear: {found[:5]}"


def union_items(received: list[Received]) -> list[bytes]:
    return [item for r in received if r.method == "Union" for item in wire_union_items(r.message)]


@pytest.fixture(scope="module")
def leak_data() -> Dataset:
    return hospital_dataset(1800, seed=9)


_PREPARE = UnionRole.prepare  # unpatched: the two recorded sessions can be open at once
PAD_TO = 1000  # the pairwise session pads every union batch to this many items (> 1800 / 3)


def _record(tmp_path: Path, dataset: Dataset, sum_mode: str, pad_to: int = 0) -> Iterator[Recorded]:
    """Run one recorded session (module-scoped: the recording is read by several tests)."""
    parts = split_table(dataset.table, 3, "random", seed=4)
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        recording_federation(parts, dataset.taxonomy_path, tmp_path, monkeypatch) as fed,
    ):
        prepared: list[int] = []

        def recording_prepare(role: UnionRole, count: int) -> None:
            prepared.append(count)
            _PREPARE(role, count)

        monkeypatch.setattr(UnionRole, "prepare", recording_prepare)
        spec = dataset.spec(L=3, K=20, C="0.2")
        out = tmp_path / "release.csv"
        report = run_distributed(
            fed.hops, fed.leader_tls, dataset, spec, out, sum_mode=sum_mode, union_pad_to=pad_to
        )
        assert_same_release(out, report, centralized(dataset, spec))
        yield Recorded(fed, dataset, report, [h.name for h in fed.hops], prepared)


@pytest.fixture(scope="module")
def ring_session(
    tmp_path_factory: pytest.TempPathFactory, leak_data: Dataset
) -> Iterator[Recorded]:
    yield from _record(tmp_path_factory.mktemp("ring"), leak_data, "ring")


@pytest.fixture(scope="module")
def pairwise_session(
    tmp_path_factory: pytest.TempPathFactory, leak_data: Dataset
) -> Iterator[Recorded]:
    yield from _record(tmp_path_factory.mktemp("pairwise"), leak_data, "pairwise", PAD_TO)


# ----------------------------------------------------------------------------- the leader
def _check_leader_messages(rec: Recorded) -> None:
    log = rec.fed.log
    received = log.of(role=LEADER_NAME)
    assert received and all(r.kind == "reply" for r in received)
    for r in received:
        assert r.method in LEADER_RECEIVES, f"the leader received a {r.method} reply"
        assert isinstance(r.message, LEADER_RECEIVES[r.method])

    spec = rec.dataset.spec(L=3, K=20, C="0.2")
    ours = handshake_items(spec.fingerprint_items(spec.schema(rec.dataset.taxonomy)))
    handshakes = log.of(role=LEADER_NAME, method="OpenSession")
    assert sorted(str(r.peer) for r in handshakes) == sorted(rec.ring)
    for r in handshakes:
        reply: pb.OpenSessionReply = r.message
        assert reply.party == r.peer
        assert list(reply.fingerprint_items) == ours, "handshake carries data-derived items"
        assert all(k.holder == r.peer and k.role == "party" for k in reply.keys)
    for r in log.of(role=LEADER_NAME, method="ShareKeys"):
        assert r.message.ByteSize() == 0
    for r in log.of(role=LEADER_NAME, method="End"):
        assert set(f.name for f, _ in r.message.ListFields()) <= {"bytes_sent", "bytes_received"}

    # Union batches: equal-size ciphertexts per batch, no record value inside.
    batches = [r.message for r in log.of(role=LEADER_NAME, method="Union")]
    items = union_items(log.of(role=LEADER_NAME))
    assert len(items) >= 2 * len(rec.dataset.table), "collect + strip batches expected"
    for batch in batches:
        assert len({len(item) for item in wire_union_items(batch)}) <= 1, "ciphertext sizes differ"
    secrets = secrets_of(rec.fed, rec.dataset)
    assert_no_secret(items, secrets, "union batches received by the leader")
    assert_no_secret(
        [r.message.SerializeToString() for r in received],
        private_secrets(secrets, rec.dataset),
        "messages received by the leader",
    )


def test_ring_leader_receives_only_masked_sums_and_ciphertexts(ring_session: Recorded) -> None:
    """Ring mode: the leader's Sum replies are the last party's sealed total (nonce + AES-GCM
    of R + total: 28 bytes more than the vector), holding neither the total nor R + total in
    clear; bytes uniform. That the leader opens them to the right sums is shown by the
    release equalling the centralized one."""
    _check_leader_messages(ring_session)
    fed, ring = ring_session.fed, ring_session.ring
    replies = fed.log.of(role=LEADER_NAME, method="Sum")
    assert len(replies) == ring_session.report["iterations"]
    pooled = []
    for t, r in enumerate(replies):
        sealed = bytes(r.message.sealed_total)
        assert not r.message.pairwise_share
        total = np.sum([fed.contributions.get(p, t) for p in ring], axis=0)
        assert len(sealed) == 8 * total.size + 28
        first = fed.log.of(role=ring[0], method="Sum", kind="request")[t].message
        assert first.ref.iteration == t
        masked = (words(first.partial) + total).astype("<u8")
        for plain in (total.astype("<u8"), masked):
            assert plain.tobytes()[:16] not in sealed, f"iteration {t}: a sum in clear"
        pooled.append(np.frombuffer(sealed[12 : 12 + 8 * total.size], dtype="<u8"))
    pooled_words = np.concatenate(pooled)
    assert pooled_words.size >= 2000, "too few words for a meaningful uniformity test"
    assert looks_uniform(pooled_words)


def _collect_batch_sizes(rec: Recorded) -> dict[str | None, int]:
    """Items per party in the COLLECT replies the leader received (the last Union reply with
    items is the STRIP reply of the ring's first party)."""
    replies = [r for r in rec.fed.log.of(role=LEADER_NAME, method="Union") if r.message.packed]
    assert len(replies) == len(rec.ring) + 1
    return {r.peer: len(wire_union_items(r.message)) for r in replies[:-1]}


def test_union_pad_to_hides_each_partys_record_count(
    ring_session: Recorded, pairwise_session: Recorded
) -> None:
    """Unpadded, the leader sees each hospital's record count in its COLLECT batch (as
    docs/leakage.md says); with [union] pad_to every batch has exactly pad_to items, and the
    release is still the centralized one (asserted when the session was recorded)."""
    counts = {name: len(table) for name, table in ring_session.fed.tables.items()}
    assert PAD_TO not in counts.values()
    assert _collect_batch_sizes(ring_session) == counts
    assert _collect_batch_sizes(pairwise_session) == dict.fromkeys(pairwise_session.ring, PAD_TO)
    assert pairwise_session.report["records"] == len(pairwise_session.dataset.table)
    # How many keys a party prepares shows in how long its seal takes: padded, every party
    # prepares pad_to (the leader's own number), never its record count.
    assert sorted(ring_session.prepared) == sorted(counts.values())
    assert pairwise_session.prepared == [PAD_TO] * 3


def test_pairwise_leader_shares_hide_each_party(pairwise_session: Recorded) -> None:
    """Pairwise mode: each party's share hides its vector; the shares sum to the total."""
    _check_leader_messages(pairwise_session)
    fed, ring = pairwise_session.fed, pairwise_session.ring
    iterations = pairwise_session.report["iterations"]
    pooled = []
    shares: dict[str, list[np.ndarray]] = {}
    for name in ring:
        replies = [r for r in fed.log.of(role=LEADER_NAME, method="Sum") if r.peer == name]
        assert len(replies) == iterations
        shares[name] = [share_words(bytes(r.message.pairwise_share)) for r in replies]
        assert all(not r.message.sealed_total for r in replies)
    for t in range(iterations):
        total = np.zeros_like(shares[ring[0]][t])
        for name in ring:
            local = fed.contributions.get(name, t)
            share = shares[name][t]
            assert not np.any(share == local), f"{name}'s share shows plain counts"
            total += share
            pooled.append(share)
        assert np.array_equal(total, sum(fed.contributions.get(p, t) for p in ring))
    pooled_words = np.concatenate(pooled)
    assert pooled_words.size >= 2000
    assert looks_uniform(pooled_words)


# ------------------------------------------------------------------------------ the parties
def _check_party_messages(rec: Recorded) -> None:
    """Types and senders of what each party receives; no record of anyone in clear."""
    secrets = secrets_of(rec.fed, rec.dataset)
    for i, name in enumerate(rec.ring):
        received = rec.fed.log.of(role=name)
        for r in received:
            allowed = PARTY_SERVES if r.kind == "request" else PARTY_REPLIES_FROM_SUCCESSOR
            assert r.method in allowed, f"{name} received a {r.method} {r.kind}"
            assert isinstance(r.message, allowed[r.method])
            if r.kind == "reply":
                assert r.peer == rec.ring[i + 1]
            elif r.method == "Sum" or (
                r.method == "Union" and r.message.phase == pb.UNION_PHASE_STRIP
            ):
                expected = LEADER_NAME if i == 0 else rec.ring[i - 1]
                if r.method == "Sum" and rec.report["sum_mode"] == "pairwise":
                    expected = LEADER_NAME
                assert r.peer == expected, f"{name} served {r.method} from {r.peer}"
            else:
                assert r.peer == LEADER_NAME
        items = union_items(received)
        assert len(items) >= len(rec.dataset.table), f"{name} saw no union batch"
        assert_no_secret(items, secrets, f"union items received by {name}")
        assert_no_secret(
            [r.message.SerializeToString() for r in received],
            private_secrets(secrets, rec.dataset),
            f"messages received by {name}",
        )


def test_ring_parties_receive_only_masked_partial_sums(ring_session: Recorded) -> None:
    """Party i's partial = R + plain prefix of parties before i; R fresh, uniform, never 0."""
    _check_party_messages(ring_session)
    fed, ring = ring_session.fed, ring_session.ring
    iterations = ring_session.report["iterations"]
    masks: list[np.ndarray] = []
    pooled: dict[str, list[np.ndarray]] = {name: [] for name in ring}
    for t in range(iterations):
        round_masks = []
        prefix: np.ndarray | None = None
        for i, name in enumerate(ring):
            requests = [r.message for r in fed.log.of(role=name, method="Sum", kind="request")]
            assert [q.ref.iteration for q in requests] == list(range(iterations))
            partial = words(requests[t].partial)
            local = fed.contributions.get(name, t)
            plain = np.zeros_like(local) if prefix is None else prefix
            assert not np.any(partial == plain), (
                f"{name} received plain prefix-sum elements at iteration {t}"
            )
            for other in ring:
                if other != name:
                    assert not np.any(partial == fed.contributions.get(other, t))
            round_masks.append(partial - plain)
            pooled[name].append(partial)
            prefix = plain + local
            replies = fed.log.of(role=name, method="Sum", kind="reply")
            if i + 1 < len(ring):
                # What comes back is the last party's sealed total: no vector at all.
                back = replies[t].message
                assert [f.name for f, _ in back.ListFields()] == ["sealed_total"], (
                    f"{name} received more than a sealed total"
                )
            else:
                assert not replies
        assert all(np.array_equal(m, round_masks[0]) for m in round_masks), (
            "the partial sums are not masked by one round mask"
        )
        masks.append(round_masks[0])
    for s in range(len(masks)):
        for t in range(s):
            m = min(masks[s].size, masks[t].size)
            assert not np.any(masks[s][:m] == masks[t][:m]), f"mask of round {t} reused in {s}"
    assert looks_uniform(np.concatenate(masks))
    # Each party's own view over the rounds (views of one round at different parties share R,
    # so they are not independent samples and must not be pooled together).
    for name in ring:
        assert looks_uniform(np.concatenate(pooled[name])), f"{name}'s view is not uniform"


def test_ring_neighbours_colluding_learn_the_middle_party(ring_session: Recorded) -> None:
    """The documented weakness of ring mode, shown so the pairwise mode's purpose is clear:
    what party i+1 receives minus what party i received is exactly party i's vector."""
    fed, ring = ring_session.fed, ring_session.ring
    before = fed.log.of(role=ring[1], method="Sum", kind="request")[1].message
    after = fed.log.of(role=ring[2], method="Sum", kind="request")[1].message
    leaked = words(after.partial) - words(before.partial)
    assert np.array_equal(leaked, fed.contributions.get(ring[1], 1))


def test_pairwise_parties_receive_nothing_from_each_other(pairwise_session: Recorded) -> None:
    """Pairwise mode: sums go leader -> party -> leader; no partial travels between parties,
    so neighbours have nothing to subtract (contrast with the ring test above)."""
    _check_party_messages(pairwise_session)
    fed, ring = pairwise_session.fed, pairwise_session.ring
    for name in ring:
        requests = fed.log.of(role=name, method="Sum", kind="request")
        assert len(requests) == pairwise_session.report["iterations"]
        assert all(r.peer == LEADER_NAME for r in requests)
        assert all(r.message.partial.length == 0 and not r.message.partial.data for r in requests)
        assert not fed.log.of(role=name, method="Sum", kind="reply")


def test_instructions_carry_only_the_cut_decision(ring_session: Recorded) -> None:
    """Instructions carry only the cut's decision (attribute, node, non-empty bitmap), which
    the release reveals anyway; the bitmap has exactly one bit per (Link partition, child).
    The partial sum's length is a function of T_g alone: per new group, its own slot and one
    slot per child of its value on each QID (the rest of the layout's width is zero in every
    vector and is not sent), each slot one count per channel; smaller than the full layout
    wherever a group's value has fewer children than the widest node."""
    schema = ring_session.dataset.spec(L=3, K=20, C="0.2").schema(ring_session.dataset.taxonomy)
    layout = StatsLayout.for_schema(schema)
    requests = ring_session.fed.log.of(role=ring_session.ring[0], method="Sum", kind="request")
    assert not requests[0].message.HasField("instruction")
    groups = [tuple(t.root for t in schema.taxonomies)]  # T_g's live groups, node ids per QID
    expected = [layout.channels * (1 + sum(len(t.children[t.root]) for t in schema.taxonomies))]
    full = [layout.slots * layout.channels]
    for r in requests[1:]:
        ins = r.message.instruction
        assert set(f.name for f, _ in ins.ListFields()) <= {
            "attr",
            "node",
            "nonempty",
            "nonempty_bits",
        }
        assert len(ins.nonempty) == -(-ins.nonempty_bits // 8)
        children = schema.taxonomies[ins.attr].children[ins.node]
        link = [g for g in groups if g[ins.attr] == ins.node]
        bits = np.unpackbits(np.frombuffer(ins.nonempty, np.uint8), bitorder="little")
        new = [
            (*g[: ins.attr], child, *g[ins.attr + 1 :])
            for i, g in enumerate(link)
            for j, child in enumerate(children)
            if bits[i * len(children) + j]
        ]
        groups = [g for g in groups if g[ins.attr] != ins.node] + new
        slots = sum(
            1 + sum(len(t.children[node]) for t, node in zip(schema.taxonomies, g, strict=True))
            for g in new
        )
        expected.append(slots * layout.channels)
        full.append(len(new) * layout.slots * layout.channels)
    assert [words(r.message.partial).size for r in requests] == expected
    assert sum(expected) < sum(full)


def test_secret_scan_detects_a_planted_value(ring_session: Recorded) -> None:
    """The scanner used above is not vacuous: a patient id or a record hidden among real
    ciphertexts is found, at the start, in the middle and at the end of an item."""
    items = union_items(ring_session.fed.log.of(role=LEADER_NAME))
    secrets = secrets_of(ring_session.fed, ring_session.dataset)
    patient = next(s for s in secrets if s.startswith(b"P0"))
    record = max(secrets, key=len)
    for planted in (patient + items[0], items[1][:40] + record + items[1][40:], items[2] + patient):
        with pytest.raises(AssertionError, match="in clear"):
            assert_no_secret([*items[3:50], planted], secrets, "planted")
