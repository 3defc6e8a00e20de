"""Keep freed memory in the process for reuse, where the C library returns it at once.

The LKC engine's counting passes allocate and free arrays of the table's length on every
specialization (megabytes each at 1M rows), in sizes that change from step to step. With
glibc's defaults, a block above the (moving) mmap threshold is mapped for each allocation and
unmapped when freed, and free memory at the heap's top beyond the trim threshold goes back to
the kernel, so each step faults the same pages in again: 0.5-0.9 s of kernel time in a
2.0-2.3 s anonymization of 1M rows (docs/lkc.md, "Memory reuse"). Fixing both thresholds
(blocks up to 32 MB come from the heap; up to 128 MB of free heap is kept) lets the next step
reuse the pages: the same run then spends about 0.05-0.1 s in the kernel.

The setting is process-wide, set once, and changes where memory comes from, never what a
computation returns. Blocks above 32 MB (larger tables) are still mapped and unmapped.
"""

from __future__ import annotations

import ctypes
import functools
import sys

MMAP_THRESHOLD = 32 << 20  # glibc's upper limit for M_MMAP_THRESHOLD on 64-bit systems
TRIM_THRESHOLD = 128 << 20
_M_TRIM_THRESHOLD = -1  # mallopt parameter numbers, from glibc's malloc.h
_M_MMAP_THRESHOLD = -3


@functools.cache
def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds once per process; whether they were set.

    A no-op (False) off Linux or with another C library (musl's ``mallopt`` does nothing).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - present in glibc only
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    mapped = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    trimmed = mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    return mapped and trimmed
