"""The version of the party/leader wire protocol, and the handshake items that carry it.

Bump PROTOCOL_VERSION whenever a message, a field's meaning or the order of a session's calls
changes (protos/fedanon_v1.proto, the codecs in federation/wire.py, a new phase). Both daemons
put it, with the fedanon version, at the head of the handshake fingerprint (`handshake_items`),
so a leader and a party built from different releases refuse each other at OpenSession, naming
the item, before any statistic is exchanged: the leader compares the party's fingerprint, and
the party compares the versions the leader announces in its OpenSession (``versions``) before
it looks at the job.
"""

from __future__ import annotations

from collections.abc import Sequence

import fedanon

# 7: a party a rerun leaves out is told by an End of the later attempt, an End of an earlier
#    attempt is stale (refused), StatusReply.lease_left_seconds;
# 6: an exclusion rerun is the next attempt of the same session (Rerun, SessionRef.attempt,
#    pairwise shares and union contexts bound to the attempt), a sealed session's inputs;
# 5: an exclusion rerun's prefix probe and adoption (SumRequest.prefix_probe / prefix_adopt);
# 4: kACTUS count steps' count_bits, packed fields at the widest width of their count per
#    word, UnionRequest.forward_kept (a resumed strip);
# 3: LKC sums carry only the possible entries, C45QueryBatch, packed C4.5 counts;
# 2: packed union items, Rejoin, exclusion, evaluate, OpenSession versions
PROTOCOL_VERSION = 7


def handshake_items(items: Sequence[str]) -> list[str]:
    """The job's fingerprint `items` headed by the software's versions, as both daemons compare
    them at OpenSession: daemons of different fedanon releases or wire protocols then refuse
    each other with one line naming the version item, instead of failing later on a message
    one of them cannot read. Read at call time (not import time) so that a test can run a party
    that claims another version."""
    return [*version_items(), *items]


def version_items() -> list[str]:
    """This software's versions as handshake items; the leader also sends them in its
    OpenSession (``versions``), so that a party refuses a leader of another release itself,
    before any work, instead of trusting the leader to notice."""
    return [f"fedanon_version:{fedanon.__version__}", f"protocol_version:{PROTOCOL_VERSION}"]


def leader_version_difference(leader_items: Sequence[str]) -> str | None:
    """Why a party refuses a leader whose OpenSession announced `leader_items` (None: the same
    versions). Names the first item that differs, or that the leader leaves out. A leader that
    announces nothing predates the announcement: it is not refused here, because it still
    compares the party's fingerprint, versions first, and refuses the party itself."""
    theirs = list(leader_items)
    if not theirs:
        return None
    for item in version_items():
        key = item.partition(":")[0]
        other = next((t for t in theirs if t.partition(":")[0] == key), None)
        if other is None:
            return f"the leader announces no {key}, this party has '{item}'"
        if other != item:
            return f"the leader has {other[:80]!r}, this party has '{item}'"
    return None
