"""DRBT F-measure (thesis 7.4) with Weka SimpleKMeans's defaults: does the gap move?

docs/reproduction.md ("DRBT") explains the one-sided gap between the thesis's F-measures and
ours by "a more stable K-means in the thesis". The only data-mining tool the thesis cites is
Witten and Frank's book [148], i.e. Weka. This script tests the hypothesis with Weka
SimpleKMeans's defaults of the thesis's time (Weka 3.4):

* **normalization:** distances on attributes min-max scaled to [0, 1] over the data set
  clustered (a constant attribute scales to 0); centres are means, so this is K-means on the
  scaled data;
* **initialization:** ``Random rnd = new Random(seed)``; for j = n-1 down to 0, pick
  ``i = rnd.nextInt(j + 1)``, take instance i as a centre unless an equal instance was taken,
  swap i and j; stop at K centres (Weka's random-instance selection, duplicates skipped);
* **seed:** 10 (``-S 10``). The thesis repeats each experiment 10 times "considering that
  K-means is not deterministic", which with a fixed seed it is not, so two readings: seeds
  1..10 (one per repetition) and seed 10 for all ten (every repetition identical).

The original and the release are clustered as two files with the same seed, so Weka picks the
same row indices on both unless their duplicates differ. The releases are those of
`fedanon.experiments.drbt.reproduce` (same generators), so the counts compare with its paired
starts row for row.

    python bench/reproduce_drbt_weka.py --sets iris,mushroom,chess [--releases 40]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from fedanon.algorithms.drbt.fmeasure import overall_f_measure
from fedanon.algorithms.drbt.kmeans import kmeans
from fedanon.algorithms.drbt.projection import project_block
from fedanon.algorithms.drbt.protocol import Summary
from fedanon.experiments.drbt.reproduce import (
    CLUSTERS,
    RELEASES,
    PointVerdict,
    ReleaseDistribution,
    issue_counts,
    release_rng,
    reproduce_f_measure,
    thesis_z,
    verdicts,
)
from fedanon.experiments.drbt.thesis import F_MEASURE

_MASK = (1 << 48) - 1
_MULTIPLIER = 0x5DEECE66D


class JavaRandom:
    """java.util.Random: the 48-bit linear congruential generator Weka seeds with -S."""

    def __init__(self, seed: int) -> None:
        self.state = (seed ^ _MULTIPLIER) & _MASK

    def _next(self, bits: int) -> int:
        self.state = (self.state * _MULTIPLIER + 0xB) & _MASK
        value = self.state >> (48 - bits)  # Java's (int) cast: two's complement at 32 bits
        return value - (1 << 32) if value >= 1 << 31 else value

    def next_int(self, bound: int) -> int:
        """Random.nextInt(bound), including its rejection loop and power-of-two shortcut."""
        if bound & -bound == bound:
            return (bound * self._next(31)) >> 31
        while True:
            bits = self._next(31)
            value = bits % bound
            if bits - value + (bound - 1) < 1 << 31:
                return value


def weka_seed_rows(data: np.ndarray, n_clusters: int, seed: int) -> np.ndarray:
    """The row indices SimpleKMeans (Weka 3.4) takes as initial centres."""
    order = list(range(data.shape[0]))
    rnd = JavaRandom(seed)
    chosen: list[int] = []
    seen: set[bytes] = set()
    for j in range(data.shape[0] - 1, -1, -1):
        i = rnd.next_int(j + 1)
        key = data[order[i]].tobytes()
        if key not in seen:
            seen.add(key)
            chosen.append(order[i])
        order[i], order[j] = order[j], order[i]
        if len(chosen) == n_clusters:
            break
    return np.array(chosen)


def min_max(data: np.ndarray) -> np.ndarray:
    """Weka's attribute normalization: (x - min) / (max - min), 0 for a constant attribute."""
    low, high = data.min(axis=0), data.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    return (data - low) / span


def weka_run(z: np.ndarray, release: np.ndarray, k: int, seed: int, normalize: bool) -> float:
    """One F-measure run: both files clustered with Weka's start for `seed`."""
    unused = np.random.default_rng(0)  # seed_rows fixes the start; kmeans draws nothing
    scale = min_max if normalize else np.asarray
    reference = kmeans(scale(z), k, unused, seed_rows=weka_seed_rows(z, k, seed)).labels
    produced = kmeans(scale(release), k, unused, seed_rows=weka_seed_rows(release, k, seed)).labels
    return overall_f_measure(reference, produced)


def weka_distribution(
    name: str, releases: int, seeds: list[int], normalize: bool = True
) -> ReleaseDistribution:
    _, kept, _ = F_MEASURE[name]
    z = thesis_z(name)
    per_release: dict[int, list[Summary]] = {k: [] for k in CLUSTERS}
    for index in range(releases):
        release = project_block(z, kept, "sparse", release_rng(name, index))
        for k in CLUSTERS:
            runs = tuple(weka_run(z, release, k, s, normalize) for s in seeds)
            per_release[k].append(Summary(runs))
    return ReleaseDistribution({k: tuple(v) for k, v in per_release.items()})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="iris,mushroom,chess")
    parser.add_argument("--releases", type=int, default=None, help="default: as reproduce.py")
    parser.add_argument(
        "--protocols",
        default="paired,weka,weka10,weka-init",
        help="paired (fedanon's default), weka (seeds 1..10), weka10 (seed 10 ten times), "
        "weka-init (Weka's starts, seeds 1..10, without the min-max scaling)",
    )
    args = parser.parse_args()
    known: dict[str, tuple[str, list[int] | None, bool]] = {
        "paired": ("paired starts (fedanon)", None, False),
        "weka": ("Weka, seeds 1..10", list(range(1, 11)), True),
        "weka10": ("Weka, seed 10 (x10)", [10] * 10, True),
        "weka-init": ("Weka starts, no scaling, seeds 1..10", list(range(1, 11)), False),
    }
    protocols = [known[key] for key in args.protocols.split(",")]
    print("| protocol | set | K | thesis | ours: 5th / median / 95th | inside | near | std |")
    print("|---|---|---|---|---|---|---|---|")
    totals: dict[str, list[PointVerdict]] = {label: [] for label, _, _ in protocols}
    for name in args.sets.split(","):
        releases = args.releases or RELEASES[name]
        for label, seeds, normalize in protocols:
            began = time.perf_counter()
            measured = (
                reproduce_f_measure(name, releases)
                if seeds is None
                else weka_distribution(name, releases, seeds, normalize)
            )
            for point in verdicts(name, measured):
                totals[label].append(point)
                print(
                    f"| {label} | {name} | {point.k} | {point.thesis:.3f} | {point.low:.3f} / "
                    f"{point.median:.3f} / {point.high:.3f} | {'yes' if point.inside else 'no'} | "
                    f"{'yes' if point.near else 'no'} | {measured.median_std(point.k):.3f} |",
                    flush=True,
                )
            print(f"<!-- {label} {name}: {time.perf_counter() - began:.0f} s -->", flush=True)
    print("\n| protocol | points | thesis inside 5th-95th | median within 0.05 |")
    print("|---|---|---|---|")
    for label, points in totals.items():
        inside, near = issue_counts(points)
        print(f"| {label} | {len(points)} | {inside} | {near} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
