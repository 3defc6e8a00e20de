"""Small helpers for reading TOML configuration files with one-line errors.

Party and leader configs are TOML; relative paths inside them are resolved against the config
file's directory so a federation folder can be moved as a whole.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, overload

from fedanon.errors import FedanonError


def read_toml(path: str | Path) -> tuple[dict[str, Any], Path]:
    """Parse a TOML file; return (data, directory for resolving relative paths)."""
    path = Path(path)
    if not path.exists():
        raise FedanonError(f"{path}: configuration file not found")
    try:
        return tomllib.loads(read_text_file(path)), path.resolve().parent
    except tomllib.TOMLDecodeError as exc:
        raise FedanonError(f"{path}: invalid TOML ({exc})") from exc


def read_text_file(path: Path, read: Callable[[Path], bytes] = Path.read_bytes) -> str:
    """A UTF-8 text file's content; a directory, an unreadable or a binary file is one error.
    `read` reads its bytes (a party's taxonomy: once, hashed as read; fedanon/readers/inputs.py).
    """
    try:
        raw = read(path)
    except OSError as exc:
        raise FedanonError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return raw.decode("utf-8-sig")  # a byte-order mark (Windows editors) is not content
    except UnicodeDecodeError as exc:
        raise FedanonError(
            f"{path}: not UTF-8 text (byte {exc.start}); is it a binary file?"
        ) from None


@overload
def resolve(base: Path, value: str) -> Path: ...
@overload
def resolve(base: Path, value: None) -> None: ...
def resolve(base: Path, value: str | None) -> Path | None:
    """A path from a config file, relative to the file's directory."""
    if value is None:
        return None
    p = Path(value)
    return p if p.is_absolute() else base / p
