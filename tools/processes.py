"""Process trees read from /proc (Linux; no psutil): what the outbound tests and bench observe
of a daemon and the worker processes it started."""

from __future__ import annotations

from pathlib import Path


def descendants(pid: int) -> list[int]:
    """`pid` and every live process below it (the union's worker processes included)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found
