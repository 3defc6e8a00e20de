"""fedanon.allocator: freed blocks stay in the process, so a repeated workload stops faulting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from fedanon.allocator import _glibc

pytestmark = pytest.mark.skipif(_glibc() is None, reason="needs glibc (Linux)")


def _run(script: str, *args: str, **env: str) -> Any:
    """`script` in a fresh interpreter (no MALLOC_* tuning from outside, `env` added): the JSON
    it prints. Each case needs its own process: the allocator settings are process-wide."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        env={**environment, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


# Ten 8 MB arrays and one of 64 MB alive at once, freed, and allocated again, four rounds: like
# an engine step, more free memory at the heap's top than glibc's default trim threshold ever
# grows to (64 MB), and one block above its largest mmap threshold (32 MB).
WORKLOAD = """
import json, resource, sys
import numpy as np
if sys.argv[1] == "tuned":
    from fedanon.allocator import keep_freed_memory
    assert keep_freed_memory()
faults = []
for _ in range(4):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    arrays = [np.ones(1 << 20) for _ in range(10)] + [np.ones(8 << 20)]
    del arrays
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps(faults))
"""


def _faults(mode: str) -> list[int]:
    # 4 KB pages: one fault per page touched afresh
    return list(_run(WORKLOAD, mode, NUMPY_MADVISE_HUGEPAGE="0"))


def test_freed_arrays_are_reused_instead_of_faulted_in_again() -> None:
    default, tuned = _faults("default"), _faults("tuned")
    pages = (10 * (8 << 20) + (64 << 20)) // 4096
    # glibc's defaults hand the 144 MB back each round and fault it in again.
    assert min(default[1:]) > pages // 2
    # Kept: after the first round the same pages serve every later one.
    assert max(tuned[1:]) < pages // 20


def test_numpy_stops_asking_for_huge_pages() -> None:
    script = (
        "import importlib, json; from fedanon.allocator import keep_freed_memory; "
        "assert keep_freed_memory(); "
        "switch = importlib.import_module('numpy._core.multiarray')._set_madvise_hugepage; "
        "print(json.dumps(switch(True)))"  # returns the setting it replaces
    )
    assert _run(script) is False


RELEASE = """
import json, os, sys
import numpy as np
from fedanon.allocator import keep_freed_memory, release_freed_memory
assert keep_freed_memory()
page = os.sysconf("SC_PAGE_SIZE")
def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
arrays = [np.ones(8 << 20) for _ in range(int(sys.argv[1]))]  # 64 MB each
del arrays
kept = resident()
release_freed_memory()
print(json.dumps(kept - resident()))
"""


def _handed_back(blocks: int) -> int:
    """Bytes a finished 'run' of `blocks` freed 64 MB arrays hands back to the kernel."""
    return int(_run(RELEASE, str(blocks)))


def test_a_large_finished_run_hands_the_kept_memory_back() -> None:
    assert _handed_back(6) > (384 << 20) // 2  # 384 MB free: above the 256 MB bound


def test_a_small_finished_run_keeps_its_memory_for_the_next() -> None:
    assert _handed_back(2) < 16 << 20  # 128 MB free: kept


SCOPE = """
import json, sys
import pandas as pd
from fedanon import allocator
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.algorithms.tds.api import build_schema
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy
rows = int(sys.argv[1])
table = generate_hospital(1000, 1)
table = pd.concat([table] * (rows // 1000), ignore_index=True)
taxonomy = load_taxonomy(hospital_taxonomy_path(), data_columns=list(table.columns))
schema = build_schema(taxonomy, table, ["age", "sex"], [], "readmitted")
LocalParty(schema, table)
print(json.dumps(allocator.tuned()))
"""


def _tuned_after_a_party_of(rows: int, **env: str) -> bool:
    return bool(_run(SCOPE, str(rows), **env))


def test_only_large_tables_change_the_allocator_and_an_operator_can_refuse() -> None:
    assert not _tuned_after_a_party_of(30_000)  # the ARX job's size keeps the defaults
    assert _tuned_after_a_party_of(100_000)
    assert not _tuned_after_a_party_of(100_000, FEDANON_ALLOCATOR="default")
