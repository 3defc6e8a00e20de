"""The job kinds' registry imports a kind's module at its first lookup (party/handlers/
__init__.py): one that fails to load is refused in one line naming the kind, the lookup
stays a refusal (not a KeyError a `get` would hide), and the other kinds are served."""

from __future__ import annotations

import pytest

from fedanon.party.handlers import Handlers
from fedanon.party.policy import PolicyRefusal


def test_a_kind_whose_module_fails_to_load_is_a_one_line_refusal() -> None:
    handlers = Handlers({"lkc": "lkc", "gone": "no_such_kind_module"})
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
