"""What the leader and the parties agree on about rerunning an LKC job without parties that
dropped out for good (docs/distributed.md "Exclusion", docs/leakage.md "Exclusion").

A rerun is a fresh session among the survivors: a new session id (so fresh union keys and
pairwise masks, bound to the new session, its rounds and its roster), the specialization from
the root cut, and the shuffle union, which routes every message through the leader, since a
survivor's configured next hop may be the party that dropped out. Only the pairwise sums
(complete or sparse) and the shuffle union run without a ring route, hence the modes below; at
least ``MIN_SURVIVORS`` parties must remain, because with two each would learn the other's
counts from the totals (and the shuffle union needs three).
"""

from __future__ import annotations

#: The fewest parties a rerun may have.
MIN_SURVIVORS = 3
#: The job's modes a rerun needs (no party forwards to its configured next hop).
SUM_MODES = ("pairwise", "sparse")
UNION_MODE = "shuffle"
