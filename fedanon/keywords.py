"""Old keyword spellings of the public API, still accepted for one release with a warning.

The API speaks one vocabulary (docs/api.md, "One vocabulary"): ``k`` is the minimum group size
in every family, ``sensitive_values`` are LKC's sensitive values and ``sensitive_column`` the
sensitive column of the other families, ``n_components`` DRBT's kept dimensions (as
scikit-learn's random projections name them). A function whose keyword was renamed to reach it
takes the old one through :func:`renamed_keywords`, so its signature (and ``help()``) shows
only the new name.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from fedanon.errors import FedanonError

P = ParamSpec("P")
R = TypeVar("R")


def renamed_keywords(**old_to_new: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Accept each old keyword as its new one, with one `FutureWarning` naming the new one
    (shown by default, unlike `DeprecationWarning`, because notebook users are the audience).
    Both spellings at once is an error: which value was meant is not ours to guess."""

    def wrap(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def accept(*args: P.args, **kwargs: P.kwargs) -> R:
            for old, new in old_to_new.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise FedanonError(
                        f"{func.__name__}: give {new}= only ({old}= is its deprecated name)"
                    )
                warnings.warn(
                    f"{func.__name__}: keyword {old}= is deprecated, use {new}= "
                    "(it will be removed)",
                    FutureWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        accept.__renamed_keywords__ = dict(old_to_new)  # type: ignore[attr-defined]
        return accept

    return wrap
