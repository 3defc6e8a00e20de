"""How many counts an LKC run's secure sums carry: the full layout, the carried entries
(layout.py's ``carried``: what the sums send since #26 session 9) and the non-zero ones.

Runs the centralized engine (the same steps as the federation) on Adult blown up to ``--rows``
records and counts, over every iteration's vector of new partitions, the entries of the full
layout (every group padded to each taxonomy's widest branching), the carried ones and those
non-zero in the total. No daemons: sizes only (a ring sum of n parties moves n such vectors
per iteration; through the relay each crosses twice).

    .venv/bin/python bench/bench_sum_entries.py --rows 1000000 --C 1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from bench_distributed import lkc_job
from bench_outbound import blow_up

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema
from fedanon.algorithms.tds.layout import Specialization, carried
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.readers.datadir import data_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    adult = data_dir() / "adult"
    parser.add_argument("--data", type=Path, default=adult / "adult_all.csv")
    parser.add_argument("--taxonomy", type=Path, default=adult / "lkc_paper_taxonomy.hchy")
    parser.add_argument("--rows", type=int, default=0, help="blow the table up to this many")
    parser.add_argument("--L", type=int, default=4)
    parser.add_argument("--K", type=int, default=20)
    parser.add_argument("--C", default="0.2")
    args = parser.parse_args(argv)
    table = pd.read_csv(args.data, dtype=str, keep_default_na=False)
    if args.rows:
        table = blow_up(table, args.rows)
    taxonomy, spec = lkc_job(table, args)
    counted: list[tuple[int, int, int]] = []  # (full, carried, non-zero) per iteration
    specialize = LocalParty.specialize

    def counting(party: LocalParty, step: Specialization) -> np.ndarray:
        flat = specialize(party, step)
        layout, table_ = party.layout, party.partitions
        new = flat.size // (layout.slots * layout.channels)
        keys = table_.keys[table_.size - new : table_.size]
        mask = carried(layout, party.schema, keys)
        counted.append((flat.size, int(mask.sum()), int(np.count_nonzero(flat))))
        return flat

    setattr(LocalParty, "specialize", counting)  # noqa: B010 - count every step of the run
    schema = build_schema(taxonomy, table, spec.qids, spec.sensitive, spec.class_column)
    anonymize_lkc(table, schema, spec.params, spec.score, spec.drop, search="greedy")
    full, kept, nonzero = (sum(c[i] for c in counted) for i in range(3))
    print(
        f"{len(table):,} records, L={args.L} K={args.K} C={args.C}: "
        f"{len(counted)} specializations (the start aside)"
    )
    print(f"entries summed over the run: full layout {full:,} ({8 * full / 1e6:.1f} MB)")
    print(f"  carried {kept:,} ({8 * kept / 1e6:.1f} MB, {100 * kept / full:.1f} %)")
    print(f"  non-zero in the total {nonzero:,} ({100 * nonzero / full:.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
