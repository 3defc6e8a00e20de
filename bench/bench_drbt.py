"""Throughput of the DRBT projection against scikit-learn's random projections.

One data matrix (default 10^6 x 100 float64, standard normal) is projected to 50 dimensions by:
fedanon's `project_block` (draws R, then one matmul), scikit-learn's Sparse- and
GaussianRandomProjection (fit + transform) when scikit-learn is installed (`pip install
-e '.[bench]'`), and a bare numpy matmul with a ready-made R as the floor. Prints the best of
--repeat runs per method (wall and CPU seconds).
Run: ``.venv/bin/python bench/bench_drbt.py [--rows N] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np

from fedanon.algorithms.drbt.matrices import random_matrix
from fedanon.algorithms.drbt.projection import project_block, zscore


def best_of(repeat: int, run: Callable[[], np.ndarray]) -> tuple[float, float, tuple[int, ...]]:
    """Best wall time of `repeat` runs, the CPU time of that run, and the result's shape.

    CPU time (all threads of the process) is reported too because other sessions share the
    machine's cores: wall time then depends on their load, CPU time much less.
    """
    best = (float("inf"), 0.0)
    shape: tuple[int, ...] = ()
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        shape = np.shape(run())
        best = min(best, (time.perf_counter() - wall, time.process_time() - cpu))
    return best[0], best[1], shape


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dims", type=int, default=100)
    parser.add_argument("--keep", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data = np.random.default_rng(0).standard_normal((args.rows, args.dims))
    rng = np.random.default_rng(1)
    ready = random_matrix(args.dims, args.keep, "sparse", rng)
    cases: list[tuple[str, Callable[[], np.ndarray]]] = [
        ("numpy matmul, R given", lambda: data @ ready),
        ("fedanon project_block sparse", lambda: project_block(data, args.keep, "sparse", rng)),
        ("fedanon project_block gaussian", lambda: project_block(data, args.keep, "gaussian", rng)),
        ("fedanon zscore", lambda: zscore(data)),
    ]
    try:
        from sklearn.random_projection import GaussianRandomProjection, SparseRandomProjection
    except ImportError:
        print("scikit-learn is not installed: comparing against plain numpy matmul only")
    else:
        cases += [
            (
                "sklearn SparseRandomProjection 1/3",
                lambda: SparseRandomProjection(
                    args.keep, density=1 / 3, random_state=2
                ).fit_transform(data),
            ),
            (
                "sklearn GaussianRandomProjection",
                lambda: GaussianRandomProjection(args.keep, random_state=2).fit_transform(data),
            ),
        ]
    env = os.environ
    threads = env.get("OPENBLAS_NUM_THREADS") or env.get("OMP_NUM_THREADS") or "default"
    print(
        f"{args.rows} x {args.dims} -> {args.keep}, float64, best of {args.repeat}, "
        f"{os.cpu_count()} CPUs, BLAS threads: {threads}"
    )
    print(f"{'method':<36} {'wall s':>7} {'CPU s':>7} {'Mrows/s':>8}  output")
    for name, run in cases:
        wall, cpu, shape = best_of(args.repeat, run)
        print(f"{name:<36} {wall:7.3f} {cpu:7.3f} {args.rows / wall / 1e6:8.2f}  {shape}")


if __name__ == "__main__":
    main()
