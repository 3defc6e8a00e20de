"""What a benchmark result means little without: CPU model, cores, load and library versions."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from importlib.metadata import version


def describe(packages: Sequence[str]) -> str:
    """One line naming the CPU, core count, current load average, Python and `packages`."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    versions = ", ".join(f"{p} {version(p)}" for p in packages)
    return (
        f"{model}, {os.cpu_count()} cores (load average {load}), "
        f"Python {platform.python_version()}, {versions}"
    )
