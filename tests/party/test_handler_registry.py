"""The job kinds' registry imports a kind's module at its first lookup (party/handlers/
__init__.py): one that fails to load is refused in one line naming the kind, the lookup
stays a refusal (not a KeyError a `get` would hide), and the other kinds are served."""

from __future__ import annotations

import pytest

from fedanon.party.handler import KindTraits
from fedanon.party.handlers import HANDLERS, Handlers, Lazy, serving
from fedanon.party.policy import PolicyRefusal


def test_a_kind_whose_module_fails_to_load_is_a_one_line_refusal() -> None:
    handlers = Handlers(
        {
            "lkc": Lazy("lkc", KindTraits(ring=True)),
            "gone": Lazy("no_such_kind_module", KindTraits(ring=True)),
        }
    )
    for _ in range(2):  # not cached as served
        with pytest.raises(PolicyRefusal) as refused:
            handlers.get("gone")
        text = str(refused.value)
        assert text.startswith(
            "job kind 'gone': this daemon cannot load its handler (ModuleNotFoundError: "
        )
        assert "\n" not in text
    assert handlers["lkc"].kind == "lkc"
    assert handlers.get("other") is None


def test_the_registry_declares_what_each_kinds_handler_serves() -> None:
    """A wrong-kind refusal names the kinds from the registry's declarations, without
    importing them: each must be what the kind's handler really serves (its session a ring
    session or not, its own RPCs)."""
    assert isinstance(HANDLERS, Handlers)
    for kind in HANDLERS:
        declared = HANDLERS.traits(kind)
        assert Handlers({kind: Lazy(kind, declared)})[kind].traits == declared, kind


def test_the_kinds_serving_a_message_are_named_without_importing_them() -> None:
    """No module is imported to answer which kinds serve a message; a kind registered as a
    handler answers from the handler itself."""
    handlers = Handlers(
        {
            "ringed": Lazy("no_such_module_a", KindTraits(ring=True, steps=frozenset({"A"}))),
            "plain": Lazy("no_such_module_b", KindTraits(ring=False, steps=frozenset({"B"}))),
        }
    )
    assert serving(handlers, lambda kind: kind.ring) == ["ringed"]
    assert serving(handlers, lambda kind: "B" in kind.steps) == ["plain"]
    assert serving(handlers, lambda kind: "C" in kind.steps) == []
    handlers["lkc"] = HANDLERS["lkc"]
    assert serving(handlers, lambda kind: kind.ring) == ["ringed", "lkc"]
    assert serving(dict(lkc=HANDLERS["lkc"]), lambda kind: kind.ring) == ["lkc"]
