"""bench/reproduce_drbt_weka.py: Weka SimpleKMeans's defaults, checked against Java.

The expected values were printed by java.util.Random (OpenJDK, `java R.java`) on this machine:
new Random(0).nextInt() = -1155484576; new Random(42).nextInt(10) x 5 = 0 3 8 4 0; new
Random(10).nextInt(150 - i) for i = 0..4 = 63 97 141 33 52; new Random(10): nextInt(64) = 46
(the power-of-two path), then nextInt(8124) = 1428.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

_SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "reproduce_drbt_weka.py"


def _bench():
    spec = importlib.util.spec_from_file_location("reproduce_drbt_weka", _SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_java_random_matches_java():
    bench = _bench()
    assert bench.JavaRandom(0)._next(32) == -1155484576
    r = bench.JavaRandom(42)
    assert [r.next_int(10) for _ in range(5)] == [0, 3, 8, 4, 0]
    r = bench.JavaRandom(10)
    assert [r.next_int(150 - i) for i in range(5)] == [63, 97, 141, 33, 52]
    r = bench.JavaRandom(10)
    assert (r.next_int(64), r.next_int(8124)) == (46, 1428)


def test_weka_starts_follow_the_swap_loop_and_skip_duplicates():
    bench = _bench()
    data = np.arange(150, dtype=float)[:, None]
    # nextInt(150) = 63, then row 63 swaps with 149, nextInt(149) = 97, nextInt(148) = 141.
    assert bench.weka_seed_rows(data, 3, 10).tolist() == [63, 97, 141]
    same = data.copy()
    same[97] = same[63]  # the second pick equals the first: Weka skips it and draws again
    assert bench.weka_seed_rows(same, 3, 10).tolist() == [63, 141, 33]


def test_min_max_scales_each_attribute_and_zeroes_constants():
    bench = _bench()
    data = np.array([[1.0, 5.0, 2.0], [3.0, 5.0, 4.0], [2.0, 5.0, 6.0]])
    np.testing.assert_allclose(
        bench.min_max(data), [[0.0, 0.0, 0.0], [1.0, 0.0, 0.5], [0.5, 0.0, 1.0]]
    )
