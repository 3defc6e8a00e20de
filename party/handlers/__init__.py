"""The job kinds this party daemon serves: one handler each, keyed by the job field's name.

Adding a job kind: a ``oneof job`` field in protos/fedanon_v1.proto, a handler module here
named in :data:`MODULES`, and the leader module that drives it (docs/architecture.md).

A kind's module (and what it imports: pandas for every kind but LKC, the kind's algorithm) is
imported when a handshake first names the kind, not when the daemon starts: a daemon listens
sooner, and one that serves LKC jobs never loads the other kinds (docs/distributed.md,
"Start-up").
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from fedanon.party.handler import JobHandler

#: Job kind (the ``OpenSessionRequest`` job field) -> the module here that serves it.
MODULES = {
    "lkc": "lkc",
    "drbt": "drbt",
    "randomize": "randomize",
    "c45": "c45",
    "kactus": "kactus",
    "evaluate": "evaluate",
}


class Handlers(Mapping[str, JobHandler]):
    """kind -> its module's ``HANDLER``, the module imported at the first lookup of its kind
    (iterating over the values imports every kind's)."""

    def __getitem__(self, kind: str) -> JobHandler:
        module = MODULES[kind]
        handler: JobHandler = importlib.import_module(f"{__name__}.{module}").HANDLER
        return handler

    def __iter__(self) -> Iterator[str]:
        return iter(MODULES)

    def __len__(self) -> int:
        return len(MODULES)


HANDLERS: Mapping[str, JobHandler] = Handlers()
