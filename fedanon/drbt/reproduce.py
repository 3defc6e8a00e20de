"""Reproduce the thesis's DRBT tables on the sets present in the data directory.

Run ``python -m fedanon.drbt.reproduce [--seed N] [--sets iris,chess]``: it prints Markdown
tables (thesis vs measured) for the F-measure (RP2, 10 trials, K = 2..5) and the stress (RP1 and
RP2, 5 projections per kept dimension). The reproduction tests call the same functions, so the
documented table and the asserted numbers come from one code path. Every set gets its own
generator derived from the seed and its name, so results do not depend on which sets run.
"""

from __future__ import annotations

import argparse
import zlib
from collections.abc import Sequence

import numpy as np

from fedanon.drbt.datasets import MISSING_SETS, THESIS_SETS, load_thesis_set
from fedanon.drbt.projection import zscore
from fedanon.drbt.protocol import StressPoint, Summary, f_measure_trials, stress_curve
from fedanon.drbt.thesis import F_MEASURE, STRESS

DEFAULT_SEED = 7_4_2007  # thesis section 7.4, 2007: any fixed value would do
CLUSTERS = (2, 3, 4, 5)


def set_rng(name: str, purpose: str, seed: int = DEFAULT_SEED) -> np.random.Generator:
    """A generator for one set and one experiment, independent of the others."""
    return np.random.default_rng([seed, zlib.crc32(f"{name}/{purpose}".encode())])


def thesis_z(name: str) -> np.ndarray:
    """The set z-scored as the thesis did; Mushroom's constant veil-type column becomes zeros."""
    return zscore(load_thesis_set(name), allow_constant=True)


def reproduce_f_measure(name: str, seed: int = DEFAULT_SEED) -> dict[int, Summary]:
    """F-measure per K for the thesis's setting of the set (RP2, d -> kept, 10 trials)."""
    _, kept, _ = F_MEASURE[name]
    return f_measure_trials(thesis_z(name), kept, "sparse", CLUSTERS, set_rng(name, "f", seed))


def reproduce_stress(name: str, matrix: str, seed: int = DEFAULT_SEED) -> list[StressPoint]:
    """Mean stress of 5 projections at each kept dimension the thesis reports for the set."""
    z = thesis_z(name)
    return stress_curve(z, STRESS[name][matrix], matrix, set_rng(name, f"stress/{matrix}", seed))


def f_measure_table(names: Sequence[str], seed: int) -> list[str]:
    lines = [
        "| set | d -> k | K | thesis mean F | measured mean F (min-max, std) | diff |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        d, kept, reference = F_MEASURE[name]
        measured = reproduce_f_measure(name, seed)
        for k in CLUSTERS:
            s = measured[k]
            lines.append(
                f"| {name} | {d} -> {kept} | {k} | {reference[k]:.3f} | {s.mean:.3f} "
                f"({s.min:.3f}-{s.max:.3f}, {s.std:.3f}) | {s.mean - reference[k]:+.3f} |"
            )
    return lines


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
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.sets.split(",") if n.strip()]
    print(f"seed {args.seed}; not available here: {', '.join(MISSING_SETS)}\n")
    print("\n".join(f_measure_table(names, args.seed)))
    print()
    print("\n".join(stress_table(names, args.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
