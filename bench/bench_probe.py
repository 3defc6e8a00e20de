"""A survivor's prefix probe: its replay counting every block against own counts only (#28).

In process, no daemons: Adult (L=2, K=10, C=1, all rows: measure.py's options) split at random over
``--parties`` as bench_dropouts.py splits it (seed 28); the whole table's uninterrupted run
gives the lost attempt's log; each survivor's probe replays its first j steps on a counting
state restarted from its kept encoding (what a daemon's rerun session gets). Two sides,
alternated A B A B in this one process:

* ``full``: the replay the probe made before session 12 (every attribute's children blocks
  counted, as the adoption still counts them);
* ``own``: ``LocalParty.count_own_only`` first (what ``LKCSession._probe`` now does).

Both answers' own counts are checked equal on every survivor. Prints per j the median over
``--repeat`` rounds of the CPU (``time.process_time``) and wall milliseconds per survivor,
and own / full.

    FEDANON_DATA_DIR=/work/shared/data nice -n 5 .venv/bin/python bench/bench_probe.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import pandas as pd
from measure import adult_arguments, adult_lkc_job

from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.layout import Specialization
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.algorithms.tds.prefix import replayed
from fedanon.leader.sim import split_table
from fedanon.schema import Schema


def _log(schema: Schema, table: pd.DataFrame, spec: object) -> list[Specialization]:
    party = LocalParty(schema, table)
    steps: list[Specialization] = []
    specialize = party.specialize

    def record(step: Specialization) -> np.ndarray:
        steps.append(step)
        return specialize(step)

    party.specialize = record  # type: ignore[method-assign]
    LKCEngine(schema, spec.params, score=spec.score).run(party)  # type: ignore[attr-defined]
    return steps


def _timed(call: Callable[[], np.ndarray]) -> tuple[float, float, np.ndarray]:
    cpu, wall = time.process_time(), time.perf_counter()
    out = call()
    return time.process_time() - cpu, time.perf_counter() - wall, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    adult_arguments(parser, rows=0, C="1")
    parser.add_argument("--parties", type=int, default=20)
    parser.add_argument("--at", default="2,12,16", help="prefix lengths j to probe")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    table, taxonomy, spec = adult_lkc_job(args)
    schema = spec.schema(taxonomy)
    steps = _log(schema, table, spec)
    parts = split_table(table, args.parties, "random", seed=28)
    kept = [LocalParty(schema, part) for part in parts[1:]]  # the survivors' encodings
    print(f"{args.parties} parties, {len(steps)} specializations")
    print("j | full CPU ms | own CPU ms | own/full CPU | full wall ms | own wall ms | own/full")

    def full(party: LocalParty, j: int) -> np.ndarray:
        state = party.restarted(schema)
        return replayed(state, schema, steps[:j])[1][:, 0, :]

    def own(party: LocalParty, j: int) -> np.ndarray:
        state = party.restarted(schema)
        state.count_own_only()
        return replayed(state, schema, steps[:j])[1][:, 0, :]

    for j in (int(x) for x in args.at.split(",")):
        j = min(j, len(steps))
        times: dict[str, tuple[list[float], list[float]]] = {"full": ([], []), "own": ([], [])}
        for _ in range(args.repeat):
            for name, side in (("full", full), ("own", own)):  # A B, A B, ...
                cpu = wall = 0.0
                for i, party in enumerate(kept):
                    c, w, answer = _timed(partial(side, party, j))
                    cpu, wall = cpu + c, wall + w
                    if name == "own":
                        assert np.array_equal(answer, full(party, j)), (j, i)
                times[name][0].append(1000 * cpu / len(kept))
                times[name][1].append(1000 * wall / len(kept))
        fc, fw = (statistics.median(x) for x in times["full"])
        oc, ow = (statistics.median(x) for x in times["own"])
        print(f"{j} | {fc:.2f} | {oc:.2f} | {oc / fc:.2f} | {fw:.2f} | {ow:.2f} | {ow / fw:.2f}")


if __name__ == "__main__":
    main()
