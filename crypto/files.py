"""Atomic file output for key and certificate files: write a temporary sibling, then rename.

The crypto package imports nothing from the rest of fedanon (it is reusable and reviewable on its
own), so it carries this small helper rather than borrowing the core's. The temporary file is
created by `tempfile.mkstemp`, hence mode 0600: a private key is never readable by others, not
even for a moment, and a failure half-way leaves no partial key behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside `target`; rename it onto `target` when the block succeeds."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
