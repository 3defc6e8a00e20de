"""Reproduce the thesis's DRBT tables on the sets present in the data directory.

Run ``python -m fedanon.experiments.drbt.reproduce [--seed N] [--sets iris,chess]
[--starts paired|independent] [--releases N] [--no-stress]``: it prints Markdown tables (thesis
vs measured) for the F-measure (RP2, one release and 10 K-means runs, K = 2..5, repeated on at
least 20 releases per set) with the issue's two counts, and the stress (RP1 and RP2, 5
projections per kept dimension). The reproduction tests call the same functions, so the
documented table and the asserted numbers come from one code path. Every set gets its own
generators derived from the seed and its name, so results do not depend on which sets run, and
release i of a set has its own generator (`release_rng`), so any one release and its 10 runs can
be replayed alone; both start modes see the same releases.
"""

from __future__ import annotations

import argparse
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedanon.algorithms.drbt.datasets import MISSING_SETS, THESIS_SETS, load_thesis_set
from fedanon.algorithms.drbt.projection import project_block, zscore
from fedanon.algorithms.drbt.protocol import (
    STARTS,
    StressPoint,
    Summary,
    release_f_measure,
    stress_curve,
)
from fedanon.experiments.drbt.thesis import F_MEASURE, F_SPREAD, STRESS

DEFAULT_SEED = 7_4_2007  # thesis section 7.4, 2007: any fixed value would do
CLUSTERS = (2, 3, 4, 5)
# Releases drawn per set for the F-measure distribution (the issue asks for at least 20):
# Connect's K-means (67,557 rows) costs about a minute per release of 10 runs x 4 K, the others
# a few seconds.
RELEASES = {"iris": 40, "mushroom": 40, "chess": 40, "connect": 20}
# The issue's acceptance test: the thesis's value inside our 5th-95th percentile at >= 14 of the
# 16 points, and our median within NEAR of it at >= 12 of 16.
BAND_PERCENTILES = (5.0, 95.0)
NEAR = 0.05
TARGET_INSIDE = 14
TARGET_NEAR = 12


def set_rng(name: str, purpose: str, seed: int = DEFAULT_SEED) -> np.random.Generator:
    """A generator for one set and one experiment, independent of the others."""
    return np.random.default_rng([seed, zlib.crc32(f"{name}/{purpose}".encode())])


def release_rng(name: str, index: int, seed: int = DEFAULT_SEED) -> np.random.Generator:
    """The generator of release `index` of set `name`: its matrix, then its K-means starts."""
    return np.random.default_rng([seed, zlib.crc32(f"{name}/f-release".encode()), index])


def thesis_z(name: str) -> np.ndarray:
    """The set z-scored as the thesis did; Mushroom's constant veil-type column becomes zeros."""
    return zscore(load_thesis_set(name), allow_constant=True)


@dataclass(frozen=True)
class ReleaseDistribution:
    """The thesis's F-measure trial (one release, 10 K-means runs) repeated on many releases.

    The thesis reports one release per setting, so its mean F is a single draw from the
    distribution of per-release means; comparing it with another single draw would mostly
    measure the luck of two matrices. Drawing many releases shows where the thesis's release
    falls: its percentile rank, and whether it lies between our 5th and 95th percentiles.
    """

    per_release: dict[int, tuple[Summary, ...]]

    def means(self, k: int) -> np.ndarray:
        """Each release's mean F over its K-means trials."""
        return np.array([s.mean for s in self.per_release[k]])

    def band(self, k: int) -> tuple[float, float]:
        """The 5th and 95th percentiles of the per-release means (numpy's linear rule)."""
        low, high = np.percentile(self.means(k), BAND_PERCENTILES)
        return float(low), float(high)

    def median(self, k: int) -> float:
        """The median of the per-release means."""
        return float(np.median(self.means(k)))

    def rank(self, k: int, value: float) -> float:
        """Share of releases whose mean F is below `value` (ties count half)."""
        means = self.means(k)
        return float(((means < value).sum() + 0.5 * (means == value).sum()) / means.size)

    def share_within(self, k: int, value: float, tolerance: float) -> float:
        """Share of releases whose mean F is within `tolerance` of `value`."""
        return float((np.abs(self.means(k) - value) <= tolerance).mean())

    def share_between(self, k: int, low: float, high: float) -> float:
        """Share of releases whose mean F lies in [low, high]."""
        means = self.means(k)
        return float(((means >= low) & (means <= high)).mean())

    def median_std(self, k: int) -> float:
        """Median over releases of the std of K-means trials on one release."""
        return float(np.median([s.std for s in self.per_release[k]]))


def reproduce_f_measure(
    name: str,
    releases: int | None = None,
    seed: int = DEFAULT_SEED,
    *,
    starts: str = "paired",
) -> ReleaseDistribution:
    """The thesis's F-measure setting (RP2, d -> kept, 10 runs) on `releases` releases."""
    _, kept, _ = F_MEASURE[name]
    z = thesis_z(name)
    per_release: dict[int, list[Summary]] = {k: [] for k in CLUSTERS}
    for index in range(releases or RELEASES[name]):
        rng = release_rng(name, index, seed)
        release = project_block(z, kept, "sparse", rng)
        scores = release_f_measure(z, release, CLUSTERS, rng, trials=10, starts=starts)
        for k, summary in scores.items():
            per_release[k].append(summary)
    return ReleaseDistribution({k: tuple(v) for k, v in per_release.items()})


@dataclass(frozen=True)
class PointVerdict:
    """One thesis point (set, K) against our distribution of per-release means.

    The two chances say how often a release of ours passes the point's criteria in place of
    the thesis's: what a faithful reimplementation, whose thesis value is one more draw from
    our distribution, would score at this point.
    """

    name: str
    k: int
    thesis: float
    low: float
    median: float
    high: float
    inside_chance: float
    near_chance: float

    @property
    def inside(self) -> bool:
        """The thesis's value lies within our 5th-95th percentile band."""
        return self.low <= self.thesis <= self.high

    @property
    def gap(self) -> float:
        """|our median - thesis|."""
        return abs(self.median - self.thesis)

    @property
    def near(self) -> bool:
        """Our median lies within NEAR of the thesis's value."""
        return self.gap <= NEAR


def verdicts(name: str, measured: ReleaseDistribution) -> list[PointVerdict]:
    """The set's thesis points judged against `measured`, one per K."""
    reference = F_MEASURE[name][2]
    points = []
    for k in CLUSTERS:
        low, high = measured.band(k)
        median = measured.median(k)
        points.append(
            PointVerdict(
                name,
                k,
                reference[k],
                low,
                median,
                high,
                measured.share_between(k, low, high),
                measured.share_within(k, median, NEAR),
            )
        )
    return points


def issue_counts(points: Sequence[PointVerdict]) -> tuple[int, int]:
    """(points with the thesis inside our band, points with our median within NEAR of it)."""
    return sum(p.inside for p in points), sum(p.near for p in points)


def chance_at_least(chances: Sequence[float], target: int) -> float:
    """P(at least `target` of independent events with these chances occur): Poisson binomial."""
    counts = np.array([1.0])
    for chance in chances:
        counts = np.convolve(counts, [1.0 - chance, chance])
    return float(counts[target:].sum())


def reproduce_stress(name: str, matrix: str, seed: int = DEFAULT_SEED) -> list[StressPoint]:
    """Mean stress of 5 projections at each kept dimension the thesis reports for the set."""
    z = thesis_z(name)
    return stress_curve(z, STRESS[name][matrix], matrix, set_rng(name, f"stress/{matrix}", seed))


def f_measure_table(
    names: Sequence[str], seed: int, starts: str = "paired", releases: int | None = None
) -> list[str]:
    """The per-point table and the issue's two counts, as Markdown lines."""
    lines = [
        "| set | d -> k | K | thesis mean (min-max, std) | releases | ours: 5th / median / "
        "95th | inside | \\|median - thesis\\| | thesis's rank | releases within 0.05 of "
        "median | median std of one release |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    points: list[PointVerdict] = []
    for name in names:
        d, kept, _ = F_MEASURE[name]
        measured = reproduce_f_measure(name, releases, seed, starts=starts)
        for point in verdicts(name, measured):
            points.append(point)
            t_min, t_max, t_std = F_SPREAD[name][point.k]
            lines.append(
                f"| {name} | {d} -> {kept} | {point.k} | {point.thesis:.3f} "
                f"({t_min:.3f}-{t_max:.3f}, {t_std:.3f}) | {len(measured.means(point.k))} | "
                f"{point.low:.3f} / {point.median:.3f} / {point.high:.3f} | "
                f"{'yes' if point.inside else '**no**'} | {point.gap:.3f} | "
                f"{measured.rank(point.k, point.thesis):.2f} | {point.near_chance:.2f} | "
                f"{measured.median_std(point.k):.3f} |"
            )
    return [*lines, "", *count_lines(points, starts)]


def count_lines(points: Sequence[PointVerdict], starts: str) -> list[str]:
    """The issue's two counts, and what a faithful reimplementation would expect of them."""
    inside, near = issue_counts(points)
    inside_chances = [p.inside_chance for p in points]
    near_chances = [p.near_chance for p in points]
    faithful = (
        "if the thesis's releases were draws from our distributions (a faithful "
        f"reimplementation): expected inside {sum(inside_chances):.1f}, expected near "
        f"{sum(near_chances):.1f} of {len(points)}"
    )
    if len(points) >= TARGET_INSIDE:
        faithful += (
            f"; P(inside >= {TARGET_INSIDE}) {chance_at_least(inside_chances, TARGET_INSIDE):.2f}"
            f", P(near >= {TARGET_NEAR}) {chance_at_least(near_chances, TARGET_NEAR):.2f}"
        )
    return [
        f"starts {starts}: thesis inside our 5th-95th percentile at {inside} of {len(points)} "
        f"points (target >= {TARGET_INSIDE} of 16); our median within {NEAR} of the thesis at "
        f"{near} of {len(points)} (target >= {TARGET_NEAR} of 16)",
        "",
        faithful,
    ]


def stress_table(names: Sequence[str], seed: int) -> list[str]:
    lines = [
        "| set | matrix | kept | thesis | measured (5 projections, std) | diff | pairs |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in names:
        if name not in STRESS:
            continue
        for matrix in ("gaussian", "sparse"):
            for point in reproduce_stress(name, matrix, seed):
                reference = STRESS[name][matrix][point.kept]
                sample = "all" if point.exact else f"{point.pairs} (sampled)"
                lines.append(
                    f"| {name} | {matrix} | {point.kept} | {reference:.3f} | "
                    f"{point.summary.mean:.3f} ({point.summary.std:.3f}) | "
                    f"{point.summary.mean - reference:+.3f} | {sample} |"
                )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--sets", default=",".join(THESIS_SETS), help="comma-separated names")
    parser.add_argument(
        "--starts",
        choices=STARTS,
        default="paired",
        help="initial rows of the two K-means runs of an F-measure run (default: paired)",
    )
    parser.add_argument("--releases", type=int, help="releases per set (default: 40, Connect 20)")
    parser.add_argument("--no-stress", action="store_true", help="skip the stress table")
    args = parser.parse_args(argv)
    if args.releases is not None and args.releases < 2:
        parser.error("--releases must be at least 2 (a percentile band needs a distribution)")
    names = [n.strip() for n in args.sets.split(",") if n.strip()]
    print(f"seed {args.seed}; not available here: {', '.join(MISSING_SETS)}\n")
    print("\n".join(f_measure_table(names, args.seed, args.starts, args.releases)))
    if not args.no_stress:
        print()
        print("\n".join(stress_table(names, args.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
