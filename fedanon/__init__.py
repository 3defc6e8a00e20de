"""fedanon: joint anonymization of hospital tables (LKC-privacy over a gRPC ring, DRBT, ...).

The public Python API (docs/api.md) is reached as ``fedanon.<name>``. Each name is imported on
first use (module ``__getattr__``), so ``import fedanon`` loads neither pandas nor an algorithm
and the command line starts quickly.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Public name -> module that defines it.
_PUBLIC = {
    "Release": "fedanon.api",
    "anonymize_lkc": "fedanon.api",
    "check_lkc": "fedanon.api",
    "evaluate_lkc": "fedanon.api",
    "load_taxonomy": "fedanon.taxonomy.loader",
    "anonymize_kactus": "fedanon.public.kactus",
    "anonymize_mondrian": "fedanon.public.kactus",
    "check_k_anonymity": "fedanon.public.kactus",
    "evaluate_classification": "fedanon.public.kactus",
    "anonymize_alpha_k": "fedanon.public.alphak",
    "check_alpha_k": "fedanon.public.alphak",
    "evaluate_queries": "fedanon.public.alphak",
    "anonymize_randomize": "fedanon.public.randomization",
    "evaluate_randomization": "fedanon.public.randomization",
    "sanitize": "fedanon.public.sanitization",
    "evaluate_sanitization": "fedanon.public.sanitization",
    "anonymize_drbt": "fedanon.public.drbt",
    "evaluate_drbt": "fedanon.public.drbt",
}

__all__ = ["__version__", *sorted(_PUBLIC)]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'fedanon' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
