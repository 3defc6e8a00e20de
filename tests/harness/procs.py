"""What /proc says about processes (psutil is not a dependency of the package)."""

from __future__ import annotations

from pathlib import Path


def group_members(group: int) -> list[int]:
    """Pids of the live processes (zombies aside) of process group `group`: what a killed or
    stopped command's group (its workers, a block's background jobs) still runs."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members
