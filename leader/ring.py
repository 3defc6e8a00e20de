"""Opening a ring session at the leader: what every ring job kind (LKC, randomization) does
after the handshake of leader/session.py, before its own steps.

The parties' released columns are agreed, the union keys shared (leader/union.py) and the
secure-sum protocol chosen from the job's ``sum_mode`` (leader/federation.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fedanon.errors import FedanonError
from fedanon.leader.federation import SUM_PROTOCOLS, NoRejoin, Resender, RingCalls, SumProtocol
from fedanon.leader.rejoin import Rejoiner
from fedanon.leader.session import Session
from fedanon.leader.union import UnionKeys
from fedanon.protos import fedanon_v1_pb2 as pb


@dataclass(frozen=True)
class RingOpened:
    """A ring session after its handshake: replies, agreed columns, union keys, secure sum."""

    replies: dict[str, pb.OpenSessionReply]
    columns: list[str]
    keys: UnionKeys
    sums: SumProtocol
    rejoin: Resender


def open_ring(
    session: Session,
    items: Sequence[str],
    request: pb.OpenSessionRequest,
    sum_mode: str,
    prepare_union: bool = False,
    pad_to: int = 0,
    rejoin_seconds: float = 0.0,
) -> RingOpened:
    """Handshake with `request` (as :meth:`Session.handshake`), agree the released columns,
    share the union (and sum) keys, and choose the secure-sum protocol `sum_mode` names
    ("ring" or "pairwise"). `prepare_union` (with the union's `pad_to`) asks the parties to
    prepare a layered union's keys while the loop runs. `rejoin_seconds` > 0 (a kind whose
    parties replay: LKC) waits that long for a party that went away during a secure sum
    (leader/rejoin.py)."""
    request.sum_mode = SUM_PROTOCOLS[sum_mode][0]
    opened = session.handshake(items, request)
    columns = list(opened[session.ring[0]].columns)
    for name in session.ring[1:]:
        if list(opened[name].columns) != columns:
            raise FedanonError(
                f"handshake: party {name} has columns {list(opened[name].columns)}, "
                f"party {session.ring[0]} has {columns}"
            )
    keys = UnionKeys.exchange(session, opened, prepare_union=prepare_union, pad_to=pad_to)
    return _ring_opened(session, opened, columns, keys, sum_mode, rejoin_seconds)


def rerun_ring(
    session: Session, opened: RingOpened, sum_mode: str, rejoin_seconds: float = 0.0
) -> RingOpened:
    """`opened` as the session's current attempt (a rerun without parties that dropped out,
    ``Session.rekey`` done and its ``Rerun`` answered): the union's route through the
    survivors, the sums masked under the attempt, a fresh instruction log; no key is drawn or
    shared again."""
    replies = {name: opened.replies[name] for name in session.ring}
    keys = opened.keys.rekeyed(session.ring)
    return _ring_opened(session, replies, opened.columns, keys, sum_mode, rejoin_seconds)


def _ring_opened(
    session: Session,
    replies: dict[str, pb.OpenSessionReply],
    columns: list[str],
    keys: UnionKeys,
    sum_mode: str,
    rejoin_seconds: float,
) -> RingOpened:
    """The ring session's current attempt: its rejoin log and secure-sum protocol."""
    rejoin: Resender = (
        Rejoiner(
            session.session_id,
            session.ring,
            session.stubs,
            rejoin_seconds,
            session.job.rpc_seconds,
            session.channels,
            attempt=session.attempt,
        )
        if rejoin_seconds > 0
        else NoRejoin()
    )
    calls = RingCalls(
        session.session_id,
        session.ring,
        session.stubs,
        session.fan_out,
        session.job.rpc_seconds,
        lambda: keys.sealed_totals(session.session_id),
        rejoin,
        session.attempt,
    )
    return RingOpened(replies, columns, keys, SUM_PROTOCOLS[sum_mode][1](calls), rejoin)
