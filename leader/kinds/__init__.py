"""The job kinds this leader runs: one :class:`~fedanon.leader.kind.LeaderKind` each, keyed by
its job.toml section (the mirror of the party's party/handlers/__init__.py).

Adding a job kind: its module here registered below, its party handler, and the rest of the
short list in docs/architecture.md ("How to add a job kind").
"""

from fedanon.leader.kind import LeaderKind
from fedanon.leader.kinds import c45, drbt, evaluate, kactus, lkc, randomize

LEADER_KINDS: dict[str, LeaderKind] = {
    kind.section: kind
    for kind in (lkc.KIND, drbt.KIND, randomize.KIND, c45.KIND, kactus.KIND, evaluate.KIND)
}
