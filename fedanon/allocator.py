"""Keep freed memory in the process for reuse, in small pages, where the defaults return it.

The LKC engine's counting passes allocate and free arrays of the table's length on every
specialization (megabytes each at 1M rows), in sizes that change from step to step. With
glibc's defaults, a block above the (moving) mmap threshold is mapped for each allocation and
unmapped when freed, and free memory at the heap's top beyond the trim threshold goes back to
the kernel, so each step faults the same pages in again. Fixing both thresholds (blocks up to
32 MB come from the heap; up to 128 MB of free heap is kept) lets the next step reuse them.

numpy also asks the kernel for transparent huge pages for every array of 4 MB or more. Such
pages are allocated and zeroed 2 MB at a time and split again when part of one is freed; with
the memory reused they bring nothing but kernel time that swings with what else the machine
does. At 1M rows (docs/lkc.md, "Memory reuse") the anonymization spent 0.5-0.9 s in the kernel
with the defaults, 0.1-0.8 s with the thresholds alone and 0.11-0.16 s with both settings.

The settings are process-wide, made once, and change where memory comes from, never what a
computation returns. Blocks above 32 MB (larger tables) are still mapped and unmapped.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import sys

MMAP_THRESHOLD = 32 << 20  # glibc's upper limit for M_MMAP_THRESHOLD on 64-bit systems
TRIM_THRESHOLD = 128 << 20
_M_TRIM_THRESHOLD = -1  # mallopt parameter numbers, from glibc's malloc.h
_M_MMAP_THRESHOLD = -3


@functools.cache
def keep_freed_memory() -> bool:
    """Make both settings once per process; whether glibc's thresholds were set.

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
    if mapped and trimmed:
        _no_huge_pages()
    return mapped and trimmed


def _no_huge_pages() -> None:
    """Stop numpy's huge-page requests (its switch for the NUMPY_MADVISE_HUGEPAGE variable)."""
    switch = getattr(
        importlib.import_module("numpy._core.multiarray"), "_set_madvise_hugepage", None
    )
    if switch is not None:
        switch(False)
