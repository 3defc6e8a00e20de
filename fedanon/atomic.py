"""Atomic file output: write to a temporary sibling, then rename.

A crash or an error half-way leaves no partial output file behind, which the CLI promises.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from fedanon.errors import FedanonError

#: Why an output that is a symbolic link is refused (docs/output-safety.md): replacing the link
#: loses it, and writing through it writes wherever the link points, which in a shared
#: directory someone else may choose.
SYMLINK_REFUSED = "is a symbolic link; refusing to replace it or write through it"


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path in the target's directory; rename it onto `target` on success."""
    target = Path(target)
    if target.is_symlink():
        raise FedanonError(f"{target}: {SYMLINK_REFUSED}")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(target: str | os.PathLike[str], text: str) -> None:
    """Write `text` to `target` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(target: str | os.PathLike[str], payload: object) -> None:
    """Write a JSON document (reports) atomically."""
    write_text_atomic(target, json.dumps(payload, indent=2, default=str) + "\n")
