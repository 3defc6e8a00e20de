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
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass

from fedanon.party.handler import JobHandler, KindTraits
from fedanon.party.policy import PolicyRefusal


@dataclass(frozen=True)
class Lazy:
    """A kind not imported yet: its module here and what its session serves (the handler's
    own ``traits`` once loaded; tests/party/test_handler_registry.py checks they agree)."""

    module: str
    traits: KindTraits


class Handlers(MutableMapping[str, JobHandler]):
    """kind -> its handler: a module here named by the kind, imported at the kind's first
    lookup (iterating over the values imports every kind's), or a handler registered as it is
    (``HANDLERS[kind] = handler``). A kind whose module fails to load (a missing or broken
    dependency) is refused in one line, as this party's policy would refuse it, and the
    daemon goes on serving the others."""

    def __init__(self, modules: dict[str, Lazy]) -> None:
        self._entries: dict[str, JobHandler | Lazy] = dict(modules)

    def __getitem__(self, kind: str) -> JobHandler:
        entry = self._entries[kind]
        if isinstance(entry, Lazy):
            try:
                entry = importlib.import_module(f"{__name__}.{entry.module}").HANDLER
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

    def traits(self, kind: str) -> KindTraits:
        """What `kind`'s session serves, without importing its module."""
        return self._entries[kind].traits


def serving(handlers: Mapping[str, JobHandler], wanted: Callable[[KindTraits], bool]) -> list[str]:
    """The kinds of `handlers` whose sessions serve what `wanted` asks (for a refusal's text):
    from the registry's declarations where it is one, importing no kind's module."""
    if isinstance(handlers, Handlers):
        return [kind for kind in handlers if wanted(handlers.traits(kind))]
    return [kind for kind, handler in handlers.items() if wanted(handler.traits)]


#: Job kind (the ``OpenSessionRequest`` job field) -> the module here that serves it, and what
#: its session serves.
HANDLERS: MutableMapping[str, JobHandler] = Handlers(
    {
        "lkc": Lazy("lkc", KindTraits(ring=True)),
        "drbt": Lazy("drbt", KindTraits(ring=False, steps=frozenset({"Ids", "Project", "Assign"}))),
        "randomize": Lazy("randomize", KindTraits(ring=True, steps=frozenset({"Randomize"}))),
        "c45": Lazy("c45", KindTraits(ring=True, steps=frozenset({"C45Count"}))),
        "kactus": Lazy("kactus", KindTraits(ring=True, steps=frozenset({"KactusStep"}))),
        "evaluate": Lazy(
            "evaluate",
            KindTraits(ring=True, steps=frozenset({"EvaluateClassify", "C45Count"})),
        ),
    }
)
