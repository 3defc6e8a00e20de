"""The job kinds this party daemon serves: one handler each, keyed by the job field's name.

Adding a job kind: a ``oneof job`` field in protos/fedanon_v1.proto, a handler module here
named in :data:`HANDLERS`, and the leader module that drives it (docs/architecture.md).

A kind's module (and what it imports: pandas for every kind but LKC, the kind's algorithm) is
imported when a handshake first names the kind, not when the daemon starts: a daemon listens
sooner, and one that serves LKC jobs never loads the other kinds (docs/distributed.md,
"Start-up").
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping

from fedanon.party.handler import JobHandler
from fedanon.party.policy import PolicyRefusal


class Handlers(MutableMapping[str, JobHandler]):
    """kind -> its handler: a module here named by the kind, imported at the kind's first
    lookup (iterating over the values imports every kind's), or a handler registered as it is
    (``HANDLERS[kind] = handler``). A kind whose module fails to load (a missing or broken
    dependency) is refused in one line, as this party's policy would refuse it, and the
    daemon goes on serving the others."""

    def __init__(self, modules: dict[str, str]) -> None:
        self._entries: dict[str, JobHandler | str] = dict(modules)

    def __getitem__(self, kind: str) -> JobHandler:
        entry = self._entries[kind]
        if isinstance(entry, str):
            try:
                entry = importlib.import_module(f"{__name__}.{entry}").HANDLER
            except Exception as exc:  # whatever the module's import raised: not served here
                reason = " ".join(f"{type(exc).__name__}: {exc}".split())
                raise PolicyRefusal(
                    f"job kind '{kind}': this daemon cannot load its handler ({reason})"
                ) from exc
            self._entries[kind] = entry
        return entry

    def __setitem__(self, kind: str, handler: JobHandler) -> None:
        self._entries[kind] = handler

    def __delitem__(self, kind: str) -> None:
        del self._entries[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


#: Job kind (the ``OpenSessionRequest`` job field) -> the module here that serves it.
HANDLERS: MutableMapping[str, JobHandler] = Handlers(
    {
        "lkc": "lkc",
        "drbt": "drbt",
        "randomize": "randomize",
        "c45": "c45",
        "kactus": "kactus",
        "evaluate": "evaluate",
    }
)
