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
computation returns; the process never holds more than its peak. A centralized run that leaves
more than 256 MiB of free heap hands it back at its end (:func:`release_freed_memory`): kept, it
slowed the next phase, writing the release, by 2.7 s at 10M rows. A party daemon keeps up to
1 GiB between requests.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import os
import sys

TRIM_THRESHOLD = 1 << 30
# Tables from this size on get the settings: their per-step arrays (8 bytes a row, 0.8 MB and
# more) are where glibc's defaults map and unmap; the ARX job's 30,162 rows keep the defaults.
TUNE_FROM_ROWS = 100_000
OPT_OUT_VARIABLE = "FEDANON_ALLOCATOR"  # "default": never change the allocator
RELEASE_ABOVE = 256 << 20  # free heap a finished run hands back
_M_TRIM_THRESHOLD = -1  # mallopt parameter numbers, from glibc's malloc.h
_M_MMAP_MAX = -4


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (glibc 2.33 and later): heap statistics in bytes."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",  # free bytes in the heap
            "keepcost",
        )
    ]


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc on Linux (musl's ``mallopt`` does nothing), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - present in glibc only
    except (OSError, AttributeError):
        return None
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.mallopt.restype = ctypes.c_int
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    libc.malloc_trim.restype = ctypes.c_int
    if hasattr(libc, "mallinfo2"):
        libc.mallinfo2.restype = _MallInfo2
    return libc


def tune_for_rows(rows: int) -> None:
    """Keep freed memory (:func:`keep_freed_memory`) for a table of at least `TUNE_FROM_ROWS`
    rows, unless the environment says ``FEDANON_ALLOCATOR=default``.

    The settings are process-wide and stay, so a program that calls the engine on small tables
    (where the arrays are too small for glibc to map them on their own anyway) keeps its own
    allocator behaviour, and one that must never have it changed can say so.
    """
    if rows >= TUNE_FROM_ROWS and os.environ.get(OPT_OUT_VARIABLE, "") != "default":
        keep_freed_memory()


@functools.cache
def keep_freed_memory() -> bool:
    """Make both settings once per process; whether glibc's were made (False elsewhere)."""
    libc = _glibc()
    if libc is None:
        return False
    # No block is mapped on its own (glibc still maps memory when the heap cannot grow).
    heap_only = libc.mallopt(_M_MMAP_MAX, 0) == 1
    kept = libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    if heap_only and kept:
        _no_huge_pages()
    return heap_only and kept


def tuned() -> bool:
    """Whether this process's allocator settings were made (without making them)."""
    return keep_freed_memory.cache_info().currsize > 0 and keep_freed_memory()


def release_freed_memory() -> None:
    """Hand the free heap back to the kernel (glibc's ``malloc_trim``) once a run that reused it
    is over, if it holds more than :data:`RELEASE_ABOVE`.

    A small run's few megabytes stay: handed back, the next run in the process would only fault
    them in again (the ARX job, repeated in one process, ran 6 % slower so). A no-op where
    :func:`keep_freed_memory` changed nothing or glibc is older than 2.33 (no ``mallinfo2``).
    """
    libc = _glibc()
    if libc is None or not tuned() or not hasattr(libc, "mallinfo2"):
        return
    if libc.mallinfo2().fordblks > RELEASE_ABOVE:
        libc.malloc_trim(0)


def return_freed_memory() -> None:
    """Hand every arena's free memory back to the kernel now (glibc's ``malloc_trim``).

    For one-off large buffers, such as a party daemon's receive buffers for a request of many
    megabytes, which gRPC's threads free into their arenas in pieces that glibc keeps.
    A no-op where the C library is not glibc.
    """
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def _no_huge_pages() -> None:
    """Stop numpy's huge-page requests (its switch for the NUMPY_MADVISE_HUGEPAGE variable)."""
    switch = getattr(
        importlib.import_module("numpy._core.multiarray"), "_set_madvise_hugepage", None
    )
    if switch is not None:
        switch(False)
