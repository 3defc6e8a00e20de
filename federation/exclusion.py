"""What the leader and the parties agree on about rerunning an LKC job without parties that
dropped out for good (docs/distributed.md "Exclusion", docs/leakage.md "Exclusion").

A rerun is the next attempt of the same session among the survivors (no second handshake, no new
keys): the pairwise masks and the union's keys are derived again from the session's keys, bound to
the attempt and its roster (:func:`attempt_binding`), the specialization starts again from the root
cut or a prefix, and the shuffle union, which routes every message through the leader, since a
survivor's configured next hop may be the party that dropped out. Only the pairwise sums (complete
or sparse) and the shuffle union run without a ring route, hence the modes below; at least
``MIN_SURVIVORS`` parties must remain, because with two each would learn the other's counts from the
totals (and the shuffle union needs three)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from fedanon.crypto.pairwise import roster_digest
from fedanon.crypto.wire import pack_frames, u64

#: The fewest parties a rerun may have.
MIN_SURVIVORS = 3
#: The job's modes a rerun needs (no party forwards to its configured next hop).
SUM_MODES = ("pairwise", "sparse")
UNION_MODE = "shuffle"

_BINDING_TAG = b"FAT1"


def attempt_binding(session_id: str, attempt: int, ring: Sequence[str]) -> bytes:
    """What the union's keys and contexts of one attempt are bound to in place of the session
    id: the id itself for the first attempt (so a run without exclusion is as before), else a
    hash of (session id, attempt, roster), so that no ciphertext of one attempt opens in
    another."""
    sid = bytes.fromhex(session_id)
    if attempt == 0:
        return sid
    fields = [sid, u64(attempt), roster_digest(ring)]
    return hashlib.sha256(pack_frames(_BINDING_TAG, fields)).digest()


def rerun_refusal(
    current: Sequence[str], attempt: int, new_attempt: int, ring: Sequence[str], me: str
) -> str | None:
    """Why a party at `attempt` among `current` refuses to move to `new_attempt` among `ring`
    (None: it may): only the next attempt, among a subsequence of the current roster (the
    same order, no new name, at least one party left out) that holds this party and at least
    ``MIN_SURVIVORS`` parties."""
    if new_attempt <= attempt:
        return f"attempt {new_attempt} is stale (this party is at attempt {attempt})"
    if new_attempt != attempt + 1:
        return f"attempt {new_attempt} skips attempts (this party is at attempt {attempt})"
    if me not in ring:
        return "the rerun's roster leaves this party out"
    if len(set(ring)) != len(ring):
        return "the rerun's roster names a party twice"
    strangers = [name for name in ring if name not in current]
    if strangers:
        return f"the rerun's roster names {strangers[0]}, who is not in the session"
    if list(ring) != [name for name in current if name in ring]:
        return "the rerun's roster is not in the session's order"
    if len(ring) == len(current):
        return "the rerun's roster leaves no party out"
    if len(ring) < MIN_SURVIVORS:
        return f"a rerun needs at least {MIN_SURVIVORS} parties, the roster has {len(ring)}"
    return None
