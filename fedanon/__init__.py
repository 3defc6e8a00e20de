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
    "Release": "fedanon.release",
    "anonymize_lkc": "fedanon.algorithms.tds.public",
    "check_lkc": "fedanon.algorithms.tds.public",
    "evaluate_lkc": "fedanon.algorithms.tds.public",
    "load_taxonomy": "fedanon.taxonomy.loader",
    "anonymize_kactus": "fedanon.algorithms.kactus.api",
    "anonymize_mondrian": "fedanon.algorithms.mondrian.api",
    "check_k_anonymity": "fedanon.checks",
    "evaluate_classification": "fedanon.experiments.classification",
    "anonymize_alpha_k": "fedanon.algorithms.alphak.api",
    "check_alpha_k": "fedanon.checks",
    "check_l_diversity": "fedanon.checks",
    "check_t_closeness": "fedanon.checks",
    "evaluate_queries": "fedanon.algorithms.alphak.query_report",
    "anonymize_randomize": "fedanon.algorithms.randomization.api",
    "evaluate_randomization": "fedanon.algorithms.randomization.api",
    "sanitize": "fedanon.algorithms.sanitization.api",
    "evaluate_sanitization": "fedanon.algorithms.sanitization.api",
    "anonymize_drbt": "fedanon.algorithms.drbt.api",
    "evaluate_drbt": "fedanon.algorithms.drbt.api",
    "tidy": "fedanon.frames",
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
