"""Input files read once, each file's SHA-256 taken from the very bytes its reader parses.

A party daemon binds a sealed session to a digest of its inputs (party/session_store.py,
`inputs_digest`). Hashing a file apart from parsing it reads it twice, and a file replaced or
edited between the two reads gives a digest of other bytes than those parsed: a rejoin could
then accept a table the session did not use, or refuse the one it did. So every reader of a
party's inputs (its table, each format of taxonomy) reads a file whole through
:func:`read_input`, parses from those bytes, and, inside :func:`recording_inputs`, the digest
of the same bytes is recorded; outside it nothing is hashed (a CLI run or a daemon without
sealed sessions pays nothing for it).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

#: The files read under the innermost `recording_inputs`: (path, SHA-256 of its bytes).
_recorded: ContextVar[list[tuple[Path, bytes]] | None] = ContextVar("recorded", default=None)


@contextlib.contextmanager
def recording_inputs() -> Iterator[list[tuple[Path, bytes]]]:
    """Record what :func:`read_input` reads in this context, in read order."""
    files: list[tuple[Path, bytes]] = []
    token = _recorded.set(files)
    try:
        yield files
    finally:
        _recorded.reset(token)


def read_input(path: Path) -> bytes:
    """The bytes of `path`, read with one open (OSError as `open` raises it); their SHA-256
    is recorded when a :func:`recording_inputs` is active."""
    with path.open("rb") as file:
        data = file.read()
    files = _recorded.get()
    if files is not None:
        files.append((path, hashlib.sha256(data).digest()))
    return data


def text_of(data: bytes, newline: str | None = None) -> io.TextIOWrapper:
    """`data` as the text file ``open(path, encoding="utf-8-sig", newline=newline)`` would
    give: a byte-order mark dropped, the same newline translation, the same decoding errors."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline=newline)
