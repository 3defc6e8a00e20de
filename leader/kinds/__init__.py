"""The job kinds this leader runs: one :class:`~fedanon.leader.kind.LeaderKind` each, keyed by
its job.toml section (the mirror of the party's party/handlers/__init__.py).

Each kind's module is imported when its kind is first looked up, not when the registry is:
the kinds' modules import pandas and their own algorithms, and a ``leader run`` of one kind
should pay only for that kind (pandas alone costs about as much CPU as a whole centralized
``anonymize lkc`` on Adult; ``fedanon.leader.config`` validates a job file's section with the
schema of the one kind it names).

Adding a job kind: its module here registered below, its party handler, and the rest of the
short list in docs/architecture.md ("How to add a job kind").
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping

from fedanon.leader.kind import LeaderKind


class _Kinds(MutableMapping[str, LeaderKind]):
    """Sections in registration order, each kind imported from its module on first lookup; a
    kind registered by assignment (a test's extra kind) is held as given."""

    def __init__(self, modules: dict[str, str]) -> None:
        self._modules = dict(modules)
        self._kinds: dict[str, LeaderKind] = {}

    def __getitem__(self, section: str) -> LeaderKind:
        kind = self._kinds.get(section)
        if kind is None:
            module = importlib.import_module(self._modules[section])  # KeyError: not a kind
            kind = self._kinds[section] = module.KIND
        return kind

    def __setitem__(self, section: str, kind: LeaderKind) -> None:
        self._modules.setdefault(section, "")
        self._kinds[section] = kind

    def __delitem__(self, section: str) -> None:
        del self._modules[section]
        self._kinds.pop(section, None)

    def __contains__(self, section: object) -> bool:
        return section in self._modules  # without importing the kind

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)


LEADER_KINDS: MutableMapping[str, LeaderKind] = _Kinds(
    {
        section: f"fedanon.leader.kinds.{section}"
        for section in ("lkc", "drbt", "randomize", "c45", "kactus", "evaluate")
    }
)
