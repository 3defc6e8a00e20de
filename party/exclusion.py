"""The party's side of an LKC rerun without excluded parties (federation/exclusion.py).

A party joins a rerun only if its own policy allows exclusion (``[policy] allow_exclusion``):
the leader asks for one only when every party's handshake said so, and this check keeps a
party that did not opt in out of a rerun whatever the leader does. A rerun's ring is a roster
only (the configured next hop may be the party that dropped out), so the session forwards
nothing: its sum must be pairwise, and party/ring.py refuses the layered union's STRIP.
"""

from __future__ import annotations

from fedanon.errors import FedanonError
from fedanon.federation.exclusion import MIN_SURVIVORS
from fedanon.party.shell import PartyShell
from fedanon.protos import fedanon_v1_pb2 as pb


def routed(shell: PartyShell, request: pb.OpenSessionRequest) -> bool:
    """Whether the session follows the configured ring route (False: a rerun without the
    parties the request excludes); refuses a rerun this party may not join."""
    excluded = list(request.excluded)
    if not excluded:
        return True
    if not shell.config.policy.allow_exclusion:
        raise FedanonError(
            f"a rerun without {', '.join(excluded)}: its policy does not allow exclusion "
            "(allow_exclusion = false)"
        )
    if request.sum_mode not in (pb.SUM_MODE_PAIRWISE, pb.SUM_MODE_PAIRWISE_SPARSE):
        raise FedanonError("a rerun without excluded parties needs the pairwise sum")
    if set(excluded) & set(request.ring):
        raise FedanonError("a rerun's ring names a party it excludes")
    if len(request.ring) < MIN_SURVIVORS:
        raise FedanonError(
            f"a rerun needs at least {MIN_SURVIVORS} parties, the ring has {len(request.ring)}"
        )
    return False
