"""Helpers the micro-benchmarks share: best-of-N CPU time and a markdown table."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def best_cpu_seconds(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best process CPU time of `repeat` calls: the least disturbed by other load on the box."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table, ready for bench/RESULTS.md."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
