"""Keep freed memory in the process for reuse, in small pages, where the defaults return it.

The LKC engine's counting passes allocate and free arrays of the table's length on every
specialization (8 MB each at 1M rows, 80 MB at 10M), in sizes that change from step to step.
With glibc's defaults a block above the (moving, at most 32 MB) mmap threshold is mapped for
each allocation and unmapped when freed, and free memory at the heap's top beyond the trim
threshold goes back to the kernel, so each step faults the same pages in again. Serving every
block from the heap (no mmap) and keeping up to 1 GiB of free heap lets the next step reuse them.

numpy also asks the kernel for transparent huge pages for every array of 4 MB or more. Such
pages are allocated and zeroed 2 MB at a time and split again when part of one is freed; with
the memory reused they bring nothing but kernel time that swings with what else the machine
does. Measured on the paper's 1M- and 10M-row runs in docs/lkc.md, "Memory reuse".

The settings are process-wide, made once, and change where memory comes from, never what a
computation returns; the process never holds more than its peak, but keeps up to 1 GiB of it
after a run.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import sys

TRIM_THRESHOLD = 1 << 30
_M_TRIM_THRESHOLD = -1  # mallopt parameter numbers, from glibc's malloc.h
_M_MMAP_MAX = -4


@functools.cache
def keep_freed_memory() -> bool:
    """Make both settings once per process; whether glibc's were made.

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
    # No block is mapped on its own (glibc still maps memory when the heap cannot grow).
    heap_only = mallopt(_M_MMAP_MAX, 0) == 1
    kept = mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    if heap_only and kept:
        _no_huge_pages()
    return heap_only and kept


def _no_huge_pages() -> None:
    """Stop numpy's huge-page requests (its switch for the NUMPY_MADVISE_HUGEPAGE variable)."""
    switch = getattr(
        importlib.import_module("numpy._core.multiarray"), "_set_madvise_hugepage", None
    )
    if switch is not None:
        switch(False)
