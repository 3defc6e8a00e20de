"""A resumed strip (``forward_kept``, #28 rejoin) at one hop: the leader alone may send it, it
carries no items, and only a hop with a next hop takes it; then the hop forwards the batch it
peeled in the round again. The ring of real daemons is tests/distributed/test_rejoin.py's (and
tests/distributed/test_ring_authorization.py's refusals before any peel); here each refusal on
a hop that does hold a peeled batch, where only the check itself can refuse."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import grpc
import pandas as pd
import pytest

from fedanon.crypto.identity import PeerIdentity
from fedanon.crypto.packed import Packed
from fedanon.party import ring, servicer
from fedanon.party.servicer import PartyServicer
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.party.fakes import Aborted, Context, party_config

KEPT = Packed(bytes(range(8)) * 2, 8)  # what this hop peeled in round 3


class Authorized(Exception):
    """Raised by the session once the caller is authorized (nothing past that is run)."""


def _shell(name: str = "hospital-b") -> PartyServicer:
    config = party_config(name, leader="leader")
    return PartyServicer(config, pd.DataFrame({"a": ["1"]}), None, None, None, None)


def _strip(forward_kept: bool, packed: bytes = b"") -> pb.UnionRequest:
    return pb.UnionRequest(
        ref=pb.SessionRef(session_id="s", iteration=3),
        phase=pb.UNION_PHASE_STRIP,
        packed=packed,
        item_size=8 if packed else 0,
        forward_kept=forward_kept,
    )


@pytest.mark.parametrize(
    ("caller", "forward_kept", "allowed"),
    [
        ("leader", True, True),
        ("hospital-a", True, False),  # the predecessor may not make it forward its batch again
        ("hospital-a", False, True),  # the ring's own strip comes from the predecessor
        ("leader", False, False),  # ... and never from the leader past the first hop
    ],
)
def test_only_the_leader_may_resume_the_strip_at_a_hop(
    monkeypatch: pytest.MonkeyPatch, caller: str, forward_kept: bool, allowed: bool
) -> None:
    shell = _shell()
    shell.secure = True  # authorize by the caller's certificate (here its identity directly)
    role = "leader" if caller == "leader" else "party"
    monkeypatch.setattr(servicer, "peer_identity", lambda _context: PeerIdentity(caller, role))

    def touch() -> None:
        raise Authorized

    session = SimpleNamespace(predecessor="hospital-a", touch=touch)
    monkeypatch.setattr(shell, "_ring", lambda _context, _ref, _what: session)
    context = Context()
    if allowed:
        with pytest.raises(Authorized):
            shell.Union(_strip(forward_kept), context)
    else:
        with pytest.raises(Aborted):
            shell.Union(_strip(forward_kept), context)
        assert context.code() == grpc.StatusCode.PERMISSION_DENIED


def _session(successor: str | None, kept: list[Any]) -> SimpleNamespace:
    """A ring session of the first attempt (its route the configured one) at round 3 whose
    union role peeled `KEPT` in that round."""

    def keep_output(phase: int, step: int, chunks: list[Packed]) -> None:
        kept.extend(chunks)

    role = SimpleNamespace(kept=lambda round_: KEPT if round_ == 3 else None)
    role.keep_output = keep_output
    return SimpleNamespace(
        union=role,
        union_round=3,
        rerunning=False,
        successor=successor,
        check_ref=lambda ref, round_: None,
        bytes_sent=0,
    )


def test_a_hop_with_a_next_hop_forwards_its_kept_batch_for_an_empty_resumed_strip() -> None:
    output: list[Packed] = []
    reply = ring.serve_union(_shell(), _session("hospital-c", output), _strip(True), Context())  # type: ignore[arg-type]
    assert reply.chunks == 1 and [bytes(c.data) for c in output] == [KEPT.data]


@pytest.mark.parametrize(
    ("successor", "packed"),
    [
        ("hospital-c", bytes(16)),  # items with it: they would be dropped for the kept batch
        (None, b""),  # the last hop: no next hop to forward to
    ],
    ids=["with-items", "last-hop"],
)
def test_a_resumed_strip_with_items_or_at_the_last_hop_is_refused(
    successor: str | None, packed: bytes
) -> None:
    output: list[Packed] = []
    context = Context()
    with pytest.raises(Aborted):
        ring.serve_union(_shell(), _session(successor, output), _strip(True, packed), context)  # type: ignore[arg-type]
    assert context.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "a resumed strip carries no items, to a hop with a next hop" in (context.details() or "")
    assert output == []
