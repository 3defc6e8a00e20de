"""The thesis's DRBT utility protocol (section 7.4.1): stress per kept dimension, F-measure per K.

- Stress: for each kept dimension k, `projections` independent matrices (thesis: 5), the mean
  of the stress of each projection against the z-scored data.
- F-measure: `trials` trials (thesis: 10). A trial draws a fresh release D R; for every K one
  F-measure run (`f_measure_run`) draws K seed objects (Forgy, the thesis's "random seed
  selection"), runs K-means from them on the z-scored data and on the release, and scores the
  two partitions with the overall F-measure. How the two K-means runs start is the parameter
  `starts` (`STARTS`): "paired" (default) gives both the same initial rows, as one seeded
  K-means run over two row-aligned files does, so the score measures the projection's damage,
  not K-means's own instability (an isometric release scores exactly 1); "independent" draws
  separate rows for each side. Redrawing R in every trial makes the mean estimate the utility
  of *a* release rather than of one lucky or unlucky matrix; its expectation is the same as
  with one R held fixed, its variance smaller. Min, max, mean and sample std (ddof = 1) are
  reported. This is what `evaluate drbt` reports.
- `release_f_measure` is the thesis's literal trial instead: one release, K-means repeated on
  it. The reproduction draws many such releases to see where the thesis's single release
  falls among them (docs/reproduction.md, "DRBT"; the choice of paired starts is argued there
  with the numbers of both modes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from fedanon.algorithms.drbt.fmeasure import overall_f_measure
from fedanon.algorithms.drbt.kmeans import forgy_rows, kmeans
from fedanon.algorithms.drbt.projection import check_projection, project_block
from fedanon.algorithms.drbt.stress import DEFAULT_MAX_PAIRS, stress

# How the two K-means runs of one F-measure run start: from the same rows, or each from its own.
STARTS = ("paired", "independent")


@dataclass(frozen=True)
class Summary:
    """Repeated measurements of one setting and their min, max, mean and sample std."""

    values: tuple[float, ...]

    @property
    def min(self) -> float:
        return min(self.values)

    @property
    def max(self) -> float:
        return max(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def std(self) -> float:
        return float(np.std(self.values, ddof=1)) if len(self.values) > 1 else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "std": self.std,
            "values": list(self.values),
        }


@dataclass(frozen=True)
class StressPoint:
    """Stress at one kept dimension: the projections' values and the pairs each used."""

    kept: int
    summary: Summary
    pairs: int
    exact: bool


def stress_curve(
    z: np.ndarray,
    kept_dims: Iterable[int],
    matrix: str,
    rng: np.random.Generator,
    *,
    projections: int = 5,
    rescale: bool = False,
    max_pairs: int = DEFAULT_MAX_PAIRS,
) -> list[StressPoint]:
    """Mean stress of `projections` fresh releases for every kept dimension, in the given order."""
    if projections < 1:
        raise ValueError("projections must be at least 1")
    points = []
    for kept in kept_dims:
        check_projection(z.shape[1], kept, matrix)
        results = [
            stress(
                z, project_block(z, kept, matrix, rng, rescale=rescale), rng, max_pairs=max_pairs
            )
            for _ in range(projections)
        ]
        points.append(
            StressPoint(
                kept, Summary(tuple(r.value for r in results)), results[0].pairs, results[0].exact
            )
        )
    return points


@dataclass(frozen=True)
class FMeasureRun:
    """One F-measure run: its score and the initial rows of the two K-means runs it compared."""

    value: float
    original_rows: tuple[int, ...]
    release_rows: tuple[int, ...]


def f_measure_run(
    z: np.ndarray,
    release: np.ndarray,
    n_clusters: int,
    rng: np.random.Generator,
    *,
    starts: str = "paired",
) -> FMeasureRun:
    """OF of K-means on `release` against K-means on `z`, started as `starts` says (`STARTS`).

    The rows of `release` must be those of `z` in the same order: "paired" relies on row i
    being the same object on both sides.
    """
    if starts not in STARTS:
        raise ValueError(f"unknown starts '{starts}' (expected one of {', '.join(STARTS)})")
    original_rows = forgy_rows(z.shape[0], n_clusters, rng)
    release_rows = original_rows if starts == "paired" else forgy_rows(z.shape[0], n_clusters, rng)
    reference = kmeans(z, n_clusters, rng, seed_rows=original_rows).labels
    produced = kmeans(release, n_clusters, rng, seed_rows=release_rows).labels
    return FMeasureRun(
        overall_f_measure(reference, produced),
        tuple(int(row) for row in original_rows),
        tuple(int(row) for row in release_rows),
    )


def release_f_measure(
    z: np.ndarray,
    release: np.ndarray,
    clusters: Sequence[int],
    rng: np.random.Generator,
    *,
    trials: int = 10,
    starts: str = "paired",
) -> dict[int, Summary]:
    """OF per K of `trials` K-means runs on one given release (the thesis's literal trial).

    The thesis repeats K-means 10 times "considering that K-means is not deterministic": the
    release stays fixed and only K-means's seeds change, so the spread measures K-means's
    sensitivity on that release, not the spread between matrices.
    """
    if trials < 1:
        raise ValueError("trials must be at least 1")
    if z.shape[0] != release.shape[0]:
        raise ValueError(f"release has {release.shape[0]} rows, the data {z.shape[0]}")
    return {
        k: Summary(
            tuple(f_measure_run(z, release, k, rng, starts=starts).value for _ in range(trials))
        )
        for k in clusters
    }


def f_measure_trials(
    z: np.ndarray,
    kept: int,
    matrix: str,
    clusters: Sequence[int],
    rng: np.random.Generator,
    *,
    trials: int = 10,
    rescale: bool = False,
    starts: str = "paired",
) -> dict[int, Summary]:
    """Overall F-measure of K-means on fresh releases against K-means on `z`, per K."""
    check_projection(z.shape[1], kept, matrix)
    if trials < 1:
        raise ValueError("trials must be at least 1")
    if any(k < 1 or k > z.shape[0] for k in clusters):
        raise ValueError(f"every K must be in 1..{z.shape[0]}, got {list(clusters)}")
    scores: dict[int, list[float]] = {k: [] for k in clusters}
    for _ in range(trials):
        release = project_block(z, kept, matrix, rng, rescale=rescale)
        for k in clusters:
            scores[k].append(f_measure_run(z, release, k, rng, starts=starts).value)
    return {k: Summary(tuple(values)) for k, values in scores.items()}
