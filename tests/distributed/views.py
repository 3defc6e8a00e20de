"""One role's view of a whole job, and what that role can compute from it (view tests).

A view is everything one role (the leader or one party) receives and sends during a job,
reconstructed from the wire recorder of :mod:`tests.harness.wire` (what a role sends is
what its peers receive from it). From a view we derive the quantities the role can *compute*:

* for every iteration, the difference (mod 2^64) of every two count vectors of equal length the
  role saw (the received partial sum, the partial it forwarded, anything that came back, its own
  statistics), and the sum of all vectors it received from different senders in that iteration;
* sizes: the length of every vector and byte string, the number of items in every union batch;
* for union batches: how many items of one batch reappear in another (byte-equal or sharing
  their 32-byte ephemeral key), and the sizes of the groups of items that share an ephemeral key.

A computed quantity that depends on the round masks is different in every run. To tell the mask-free
ones apart, a test records the same job twice (same data, fresh masks): the quantities equal
in both runs are the mask-free ones, and those are what the role really learns. The view test
then changes the other parties' data without changing the outputs (records moved between two
other parties, equal numbers each way) and asserts every mask-free quantity is unchanged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf.message import Message

from fedanon.protos import fedanon_v1_pb2 as pb
from tests.harness.wire import WireLog, union_items

EPHEMERAL_KEY_BYTES = 32  # crypto/onion_union.py: every layer starts with its ephemeral key
Feature = tuple[object, ...]


@dataclass(frozen=True)
class Seen:
    """One message in a role's view: its direction, the other end, the RPC and the message."""

    direction: str  # "received" or "sent"
    other: str | None
    method: str
    kind: str  # "request" or "reply"
    message: Any  # a protobuf message whose class follows from `method` and `kind`


def view_of(log: WireLog, role: str) -> list[Seen]:
    """Every message `role` received, and every message it sent (as its peers received it)."""
    seen = []
    for r in log.of():
        if r.role == role:
            seen.append(Seen("received", r.peer, r.method, r.kind, r.message))
        elif r.peer == role:
            # A request the peer served came from `role`; a reply the peer received came from it.
            seen.append(Seen("sent", r.role, r.method, r.kind, r.message))
    return seen


def _vectors(message: Message) -> Iterable[tuple[str, np.ndarray | bytes]]:
    """The count vectors (as uint64 words) and opaque byte strings of a ring Sum message."""
    if isinstance(message, pb.SumRequest) and message.partial.length:
        yield "partial", np.frombuffer(message.partial.data, dtype="<u8")
    if isinstance(message, pb.SumReply):
        for field, value in message.ListFields():
            if isinstance(value, pb.Vector):
                yield field.name, np.frombuffer(value.data, dtype="<u8")
            elif isinstance(value, bytes) and field.name != "pairwise_share":
                yield field.name, value


def sum_features(
    view: list[Seen], own: dict[int, np.ndarray] | None = None
) -> dict[Feature, object]:
    """What a role can compute from the Sum messages of its view (see the module docstring).

    Replies carry no iteration number; a role's Sum calls never overlap and the recorder keeps
    call order, so replies are numbered in order per (direction, peer). `own` adds the role's
    own statistics vector of each iteration. An opaque byte string (a sealed total) is also
    read as a count vector at every byte offset where one fits: a total that were merely framed,
    not encrypted, would then show up in the differences like a clear one.
    """
    vectors: dict[int, list[tuple[str, np.ndarray | bytes]]] = {}
    reply_counter: Counter[tuple[str, str | None]] = Counter()
    for s in view:
        if s.method != "Sum":
            continue
        if s.kind == "request":
            t = int(s.message.ref.iteration)
        else:
            key = (s.direction, s.other)
            t = reply_counter[key]
            reply_counter[key] += 1
        for name, data in _vectors(s.message):
            vectors.setdefault(t, []).append((f"{s.direction} {s.kind} {s.other} {name}", data))
    for t, vector in (own or {}).items():
        vectors.setdefault(t, []).append(("own statistics", np.asarray(vector, dtype=np.uint64)))
    features: dict[Feature, object] = {}
    for t, items in vectors.items():
        numeric = [(label, v) for label, v in items if isinstance(v, np.ndarray)]
        sizes = {v.size for _, v in numeric}
        for label, v in items:
            if isinstance(v, bytes):
                numeric += [
                    (f"{label} @{offset}", np.frombuffer(v, dtype="<u8", count=n, offset=offset))
                    for n in sizes
                    for offset in range(len(v) - 8 * n + 1)
                ]
        for label, v in items:
            features[(t, label, "size")] = len(v) if isinstance(v, bytes) else v.size
        for i, (a_label, a) in enumerate(numeric):
            for b_label, b in numeric[i + 1 :]:
                if a.size == b.size:
                    features[(t, a_label, "minus", b_label)] = (a - b).tobytes()
        received = [v for label, v in numeric if label.startswith("received")]
        if len(received) > 1 and len({v.size for v in received}) == 1:
            features[(t, "sum of received")] = np.sum(received, axis=0, dtype=np.uint64).tobytes()
    return features


def share_vectors(view: list[Seen]) -> dict[int, list[np.ndarray]]:
    """Pairwise mode: the masked vectors inside the shares a role received, per iteration."""
    out: dict[int, list[np.ndarray]] = {}
    counter: Counter[str | None] = Counter()
    for s in view:
        if (
            s.method == "Sum"
            and s.kind == "reply"
            and s.direction == "received"
            and s.message.pairwise_share
        ):
            t = counter[s.other]
            counter[s.other] += 1
            out.setdefault(t, []).append(share_vector(bytes(s.message.pairwise_share)))
    return out


def share_vector(share: bytes) -> np.ndarray:
    """The masked vector of one pairwise share message (crypto/pairwise.py's ``FPS1``)."""
    from fedanon.crypto.wire import unpack_frames

    return np.frombuffer(unpack_frames(b"FPS1", share, 6)[-1], dtype="<u8")


def pairwise_features(view: list[Seen]) -> dict[Feature, object]:
    """Differences of every two shares and the sum of all shares, per iteration."""
    features: dict[Feature, object] = {}
    for t, shares in share_vectors(view).items():
        for i, a in enumerate(shares):
            features[(t, i, "share size")] = a.size
            for j in range(i + 1, len(shares)):
                features[(t, i, "minus", j)] = (a - shares[j]).tobytes()
        features[(t, "sum of shares")] = np.sum(shares, axis=0, dtype=np.uint64).tobytes()
    return features


def union_features(view: list[Seen]) -> dict[Feature, object]:
    """Sizes, owner groups (shared ephemeral keys) and overlaps of the union batches seen.

    Batches are named by direction, peer, phase and their number among batches of that name,
    never by arrival order: the COLLECT replies of a fan-out arrive in any order. A phase's
    input travels in chunks (chunk 0 starts it): they are joined into the batch the phase works
    on, since how a shuffled batch's owner groups fall into its chunks is random (a split of the
    batch's groups, which are features themselves); each chunk's size stays a feature.
    """
    named: dict[str, list[bytes]] = {}
    features: dict[Feature, object] = {}
    for s in view:
        if s.method != "Union" or not s.message.packed:
            continue
        label = f"{s.direction} {s.kind} {s.other}"
        items = union_items(s.message)
        if s.kind == "request":
            label += f" {pb.UnionPhase.Name(s.message.phase)}"
        number = sum(name.startswith(label + " #") for name in named)
        if s.kind == "request" and s.message.chunk > 0 and number > 0:
            named[f"{label} #{number - 1}"] += items
            features[(f"{label} #{number - 1}", f"chunk {s.message.chunk} items")] = len(items)
            continue
        named[f"{label} #{number}"] = items
    for label, items in named.items():
        features[(label, "items")] = len(items)
        features[(label, "item sizes")] = tuple(sorted(Counter(map(len, items)).items()))
        groups = Counter(item[:EPHEMERAL_KEY_BYTES] for item in items)
        features[(label, "owner groups")] = tuple(sorted(groups.values()))
        for other_label, other in named.items():
            if other_label >= label:
                continue
            features[(label, "equal items in", other_label)] = len(set(items) & set(other))
            keys = {item[:EPHEMERAL_KEY_BYTES] for item in other}
            features[(label, "shared keys with", other_label)] = sum(
                item[:EPHEMERAL_KEY_BYTES] in keys for item in items
            )
    return features


def mask_free(first: dict[Feature, object], again: dict[Feature, object]) -> dict[Feature, object]:
    """The quantities equal in two runs on the same data: those not hidden by fresh masks."""
    return {k: v for k, v in first.items() if again.get(k) == v}


def subset_sums(vectors: list[np.ndarray]) -> list[bytes]:
    """Every non-empty sum of `vectors` and its negation (mod 2^64), as bytes."""
    out = []
    for mask in range(1, 2 ** len(vectors)):
        total = np.sum([v for i, v in enumerate(vectors) if mask >> i & 1], axis=0, dtype=np.uint64)
        out += [total.tobytes(), (np.uint64(0) - total).tobytes()]
    return out


def changed(stable: dict[Feature, object], other: dict[Feature, object]) -> list[Feature]:
    """The mask-free quantities that differ when the other parties' data differ."""
    return [k for k, v in stable.items() if other.get(k) != v]
